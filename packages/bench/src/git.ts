import { execFileSync } from 'node:child_process';

/**
 * Runs `git -C dir …args` as the benchmarks commit their generated repositories: with a fixed
 * author and committer, so that no machine setting is needed.
 * @throws Error when git exits non-zero
 */
export function git(dir: string, ...args: string[]): void {
  execFileSync('git', ['-C', dir, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'Bench',
      GIT_AUTHOR_EMAIL: 'bench@example.test',
      GIT_COMMITTER_NAME: 'Bench',
      GIT_COMMITTER_EMAIL: 'bench@example.test',
    },
  });
}
