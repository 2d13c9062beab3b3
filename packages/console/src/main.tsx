import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiProblem } from './api/client';
import { App } from './App';
import './styles.css';
import './components/people/people.css';

// Live updates (design record 023): every query on screen is refetched each second while the
// tab is visible, so a change made elsewhere appears without a reload; client mistakes (4xx)
// are not retried.
const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      refetchInterval: 1000,
      refetchIntervalInBackground: false,
      retry: (failures, error) =>
        !(error instanceof ApiProblem && error.status < 500) && failures < 2,
    },
  },
});

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element');

createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <App />
    </QueryClientProvider>
  </StrictMode>,
);
