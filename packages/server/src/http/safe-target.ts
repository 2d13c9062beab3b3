import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { lookup as dnsLookupAll } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';

/**
 * The SSRF guard for the addresses users give Vexil to call: webhook targets (spec: Limits,
 * "Webhook URL must be a public https:// address"; design record 005) and SSO issuers, whose
 * every request goes through {@link createGuardedAgent} (design record 032). Webhook targets
 * are checked twice: when a subscription is saved (URL
 * shape, IP literal, and every address its host resolves to), and again at every connection,
 * where the resolved addresses are checked before the socket opens, so a host that later
 * re-points at an internal address (DNS rebinding) is still refused.
 */

/** A target the guard refuses; its message says why and ends up in the attempt's `error`. */
export class TargetRefusedError extends Error {
  readonly code = 'WEBHOOK_TARGET_REFUSED';
}

/**
 * Whether an IP address is public unicast. Loopback, private, link-local (the cloud metadata
 * address included), CGNAT, unique-local, unspecified, multicast, reserved and translation
 * ranges are not; an IPv4-mapped IPv6 address is judged by the IPv4 address it embeds.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  return parsed.range() === 'unicast';
}

/** A URL hostname without the brackets of an IPv6 literal. */
function bareHostname(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** Appended to refusals a development instance can lift (README: Configuration). */
const DEVELOPMENT_HINT =
  '; a development instance can allow http:// and private-network targets with VEXIL_WEBHOOK_ALLOW_PRIVATE_TARGETS=true';

/**
 * Checks what can be checked without the network: the URL parses, uses `https:` (or `http:`
 * when private targets are allowed), carries no credentials, and does not name localhost or a
 * non-public IP literal.
 * @returns the reason the URL is refused, or null when it is acceptable.
 */
export function urlProblem(url: string, allowPrivateTargets: boolean): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a valid absolute URL';
  }
  const schemes = allowPrivateTargets ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(parsed.protocol))
    return `must be an https:// address${parsed.protocol === 'http:' ? DEVELOPMENT_HINT : ''}`;
  if (parsed.username || parsed.password) return 'must not carry credentials';
  if (allowPrivateTargets) return null;
  const host = bareHostname(parsed.hostname);
  if (isLocalhostName(host)) return `must not point at localhost${DEVELOPMENT_HINT}`;
  if (isIP(host) && !isPublicAddress(host))
    return `must not point at a non-public address (${host})${DEVELOPMENT_HINT}`;
  return null;
}

/**
 * Resolves the URL's host (every address) and refuses it when any address is non-public or
 * the name does not resolve. IP literals need no lookup. Does nothing when private targets
 * are allowed.
 * @returns the reason the URL is refused, or null when it is acceptable.
 */
export async function resolvedUrlProblem(
  url: string,
  allowPrivateTargets: boolean,
): Promise<string | null> {
  const problem = urlProblem(url, allowPrivateTargets);
  if (problem || allowPrivateTargets) return problem;
  const host = bareHostname(new URL(url).hostname);
  if (isIP(host)) return null;
  let addresses: LookupAddress[];
  try {
    addresses = await dnsLookupAll(host, { all: true });
  } catch {
    return `host "${host}" does not resolve`;
  }
  const refused = addresses.find((entry) => !isPublicAddress(entry.address));
  return refused
    ? `host "${host}" resolves to a non-public address (${refused.address})${DEVELOPMENT_HINT}`
    : null;
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for `net.connect`/`tls.connect` that resolves every address of the host and
 * fails the connection when any of them is non-public.
 */
export function guardedLookup(
  hostname: string,
  options: LookupOptions,
  callback: LookupCallback,
): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) {
      callback(error, []);
      return;
    }
    const refused = addresses.find((entry) => !isPublicAddress(entry.address));
    const first = addresses[0];
    if (refused) {
      callback(
        new TargetRefusedError(
          `refused to connect: ${hostname} resolves to a non-public address (${refused.address})`,
        ),
        [],
      );
    } else if (options.all) callback(null, addresses);
    else if (!first) callback(new TargetRefusedError(`${hostname} has no address`), []);
    else callback(null, first.address, first.family);
  });
}

/**
 * The HTTP agent webhook attempts go through. Unless private targets are allowed, every
 * connection is checked: IP-literal hosts directly (Node skips `lookup` for them), names
 * through {@link guardedLookup}.
 */
export function createGuardedAgent(options: {
  allowPrivateTargets: boolean;
  timeoutMs: number;
}): Agent {
  if (options.allowPrivateTargets) {
    return new Agent({ connect: { timeout: options.timeoutMs } });
  }
  const connector = buildConnector({ timeout: options.timeoutMs, lookup: guardedLookup });
  return new Agent({
    connect: (connectOptions, callback) => {
      const host = bareHostname(connectOptions.hostname);
      if (isIP(host) && !isPublicAddress(host)) {
        callback(
          new TargetRefusedError(`refused to connect: ${host} is not a public address`),
          null,
        );
        return;
      }
      connector(connectOptions, callback);
    },
  });
}
