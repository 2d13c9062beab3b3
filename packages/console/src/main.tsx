import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiProblem } from './api/client';
import { FALLBACK_POLL_MS, liveStream } from './api/live';
import { App } from './App';
import { Theme } from '@radix-ui/themes';
import '@radix-ui/themes/tokens/base.css';
import '@radix-ui/themes/tokens/colors/indigo.css';
import '@radix-ui/themes/tokens/colors/slate.css';
import '@radix-ui/themes/tokens/colors/red.css';
import '@radix-ui/themes/tokens/colors/green.css';
import '@radix-ui/themes/components.css';
import './styles.css';
import './components/people/people.css';

// Live updates (design record 026): the organization's event stream marks the queries a change
// concerns stale (api/live.ts); only while that stream is down are the queries on screen polled,
// every 30 s, in visible tabs. Client mistakes (4xx) are not retried.
const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      refetchInterval: () => (liveStream.connected ? false : FALLBACK_POLL_MS),
      refetchIntervalInBackground: false,
      retry: (failures, error) =>
        !(error instanceof ApiProblem && error.status < 500) && failures < 2,
    },
  },
});

// Light or dark as the system says (console.md: Qualities). The class sits on <html>, so the
// dialogs that Radix portals to <body> take the same colours as the page.
const dark = matchMedia('(prefers-color-scheme: dark)');
const followScheme = () => document.documentElement.classList.toggle('dark', dark.matches);
followScheme();
dark.addEventListener('change', followScheme);

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');

createRoot(root).render(
  <StrictMode>
    <Theme appearance="inherit" accentColor="indigo" grayColor="slate" radius="medium">
      <QueryClientProvider client={queryClient}>
        <App />
      </QueryClientProvider>
    </Theme>
  </StrictMode>,
);
