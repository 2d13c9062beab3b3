import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';

const HOURS = 24;
const HOUR_MS = 3_600_000;

/**
 * Evaluations per hour over the last day, per environment (journey 4): one
 * `GET …/flags/{flag}/usage` per hour, refreshed each minute (counts are written in batches).
 */
export function UsageChart({ org, project, flag }: { org: string; project: string; flag: string }) {
  const usage = useQuery({
    queryKey: ['usage', org, project, flag],
    refetchInterval: 60_000,
    queryFn: async () => {
      const end = Math.ceil(Date.now() / HOUR_MS) * HOUR_MS;
      const hours = Array.from({ length: HOURS }, (_, i) => end - (HOURS - i) * HOUR_MS);
      const answers = await Promise.all(
        hours.map((from) =>
          unwrap(
            api.GET('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/usage', {
              params: {
                path: { org, project, flag },
                query: {
                  from: new Date(from).toISOString(),
                  // The API sums the buckets that start in [from, to]: one bucket each.
                  to: new Date(from + HOUR_MS - 1).toISOString(),
                },
              },
            }),
          ),
        ),
      );
      const environments = answers[0]?.environments.map((e) => e.environmentKey) ?? [];
      return environments.map((key) => ({
        key,
        counts: answers.map(
          (answer) => answer.environments.find((e) => e.environmentKey === key)?.total ?? 0,
        ),
        hours,
      }));
    },
  });

  return (
    <section aria-labelledby="usage-heading">
      <h2 id="usage-heading">Evaluations per hour</h2>
      {usage.error && <p role="alert">{usage.error.message}</p>}
      {usage.data?.map(({ key, counts, hours }) => {
        const max = Math.max(1, ...counts);
        const total = counts.reduce((sum, n) => sum + n, 0);
        return (
          <figure key={key} className="usage">
            <figcaption>
              {key}: {total.toLocaleString()} in the last {HOURS} hours
            </figcaption>
            <svg
              viewBox={`0 0 ${HOURS * 10} 40`}
              role="img"
              aria-label={`Evaluations per hour in ${key}, oldest first: ${counts.join(', ')}`}
              preserveAspectRatio="none"
            >
              {counts.map((count, i) => (
                <rect
                  key={i}
                  x={i * 10 + 1}
                  width={8}
                  y={40 - (count / max) * 38}
                  height={(count / max) * 38}
                >
                  <title>
                    {new Date(hours[i] ?? 0).toLocaleTimeString([], {
                      hour: '2-digit',
                      minute: '2-digit',
                    })}
                    : {count}
                  </title>
                </rect>
              ))}
            </svg>
          </figure>
        );
      })}
    </section>
  );
}
