import { describe, expect, it } from 'vitest';
import { isPublicAddress, urlProblem } from './safe-target.js';

describe('webhook URL: must be a public https:// address', () => {
  it.each([
    ['127.0.0.1', false],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['172.31.255.255', false],
    ['192.168.0.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['224.0.0.1', false],
    ['255.255.255.255', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fc00::1', false],
    ['fd12:3456::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['ff02::1', false],
    ['not-an-ip', false],
    ['93.184.215.14', true],
    ['172.32.0.1', true],
    ['2606:4700::1111', true],
    ['::ffff:93.184.215.14', true],
  ])('%s is public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });

  it('accepts https:// to a public literal or a name, refuses everything else', () => {
    expect(urlProblem('https://93.184.215.14/hook', false)).toBeNull();
    expect(urlProblem('https://hooks.example.com/vexil', false)).toBeNull();
    expect(urlProblem('http://hooks.example.com/vexil', false)).toMatch(/https/);
    expect(urlProblem('https://LOCALHOST./x', false)).toMatch(/localhost/);
    expect(urlProblem('https://[::ffff:7f00:1]/x', false)).toMatch(/non-public/);
  });

  it('refusals a development instance can lift name the setting that lifts them', () => {
    const setting = 'VEXIL_WEBHOOK_ALLOW_PRIVATE_TARGETS=true';
    expect(urlProblem('http://hooks.example.com/vexil', false)).toBe(
      `must be an https:// address; a development instance can allow http:// and private-network targets with ${setting}`,
    );
    expect(urlProblem('https://localhost/hook', false)).toContain(setting);
    expect(urlProblem('https://10.0.0.1/hook', false)).toContain(setting);
    // Not a development matter: no setting allows these.
    expect(urlProblem('ftp://hooks.example.com/x', false)).not.toContain(setting);
    expect(urlProblem('https://user:pw@hooks.example.com/x', false)).not.toContain(setting);
  });

  it('with private targets allowed, http:// and private addresses pass', () => {
    expect(urlProblem('http://127.0.0.1:3000/hook', true)).toBeNull();
    expect(urlProblem('https://localhost/hook', true)).toBeNull();
    expect(urlProblem('ftp://127.0.0.1/hook', true)).not.toBeNull();
  });
});
