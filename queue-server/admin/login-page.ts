/**
 * The login page. Its only variable part is a fixed message chosen here, never text from a request,
 * so nothing needs escaping; it has no script at all (a plain form POST works without JavaScript).
 */
export type LoginMessage = 'wrong-token' | 'rate-limited' | 'logged-out' | 'expired' | null;

const MESSAGES: Record<Exclude<LoginMessage, null>, string> = {
  'wrong-token': 'That is not the admin token. Paste the whole content of admin.token.',
  'rate-limited': 'Too many failed logins from this address. Wait a minute, then try again.',
  'logged-out': 'You are logged out.',
  expired: 'Your session ended. Log in again.',
};

export function loginPage(message: LoginMessage): string {
  const notice = message === null ? '' : `<p class="notice${message === 'wrong-token' || message === 'rate-limited' ? ' notice-error' : ''}" role="alert">${MESSAGES[message]}</p>\n`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Petrel admin: log in</title>
<link rel="icon" href="/admin/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/admin/static/admin.css">
</head>
<body class="login">
<main class="login-box">
<h1><span class="brand">Petrel</span> admin</h1>
${notice}<form method="post" action="/admin/login">
<label for="token">Admin token</label>
<input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required autofocus>
<button type="submit">Log in</button>
</form>
<p class="hint">The token is in <code>admin.token</code> in the queue server's data directory (<code>petrel start</code> prints where).</p>
</main>
</body>
</html>
`;
}
