// The login form: the broker's users, with a management tag (the node refuses others with 403).
import { useState } from 'preact/hooks';
import type { SessionInfo } from '../api.ts';
import { HttpError, logIn } from '../api.ts';
import { ErrorNote, Field, inputValue } from '../widgets.tsx';

export function LoginPage(props: { onLogin: (session: SessionInfo) => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="login"
      onSubmit={(event) => {
        event.preventDefault();
        setBusy(true);
        setError(undefined);
        logIn(username, password)
          .then(props.onLogin)
          .catch((err: unknown) => {
            setError(
              err instanceof HttpError && err.status === 401 ? 'Login failed' : (err as Error).message,
            );
          })
          .finally(() => setBusy(false));
      }}
    >
      <h1>Styx console</h1>
      <Field label="Username">
        <input
          name="username"
          autocomplete="username"
          value={username}
          onInput={(e) => setUsername(inputValue(e))}
        />
      </Field>
      <Field label="Password">
        <input
          name="password"
          type="password"
          autocomplete="current-password"
          value={password}
          onInput={(e) => setPassword(inputValue(e))}
        />
      </Field>
      <button type="submit" disabled={busy}>
        Log in
      </button>
      <ErrorNote error={error} />
    </form>
  );
}
