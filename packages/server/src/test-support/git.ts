import { execFileSync } from 'node:child_process';

/**
 * Runs `git -C dir …args` as a test commits: with a fixed author and committer, so that no
 * machine setting is needed.
 * @returns git's standard output
 * @throws Error when git exits non-zero
 */
export function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'Test',
      GIT_AUTHOR_EMAIL: 'test@example.test',
      GIT_COMMITTER_NAME: 'Test',
      GIT_COMMITTER_EMAIL: 'test@example.test',
    },
  });
}
