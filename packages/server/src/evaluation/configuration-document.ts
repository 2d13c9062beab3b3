import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { createGzip, deflateRaw, gunzip, inflateRawSync } from 'node:zlib';
import type { SdkConfiguration } from '@vexil/engine';

const gunzipAsync = promisify(gunzip);
const deflateRawAsync = promisify(deflateRaw);

/**
 * Flags per separately compressed block. Reading one flag inflates its whole block (about 25 KB
 * of JSON for typical flags, some tens of microseconds); larger blocks compress better.
 */
const FLAGS_PER_BLOCK = 32;

/**
 * An environment's server-SDK configuration (`GET /v1/sdk/flags`), serialized once per version
 * and held only compressed (design record 012): the whole document gzipped, as SDKs download it,
 * and its flags again in small deflated blocks, so that one flag can be read (for
 * `GET /v1/sdk/flags/{key}` and for compiling it) without inflating the whole document. At ten
 * thousand flags the JSON is several megabytes per environment; compressed it is a few hundred
 * kilobytes.
 */
export class ConfigurationDocument {
  private constructor(
    /** The document, gzip-compressed. */
    readonly gzipped: Buffer,
    /** Weak validator (`W/"…"`): the same for every content coding of the document. */
    readonly etag: string,
    /** The deflated blocks, one after the other: block `b` is bytes `[blockStarts[b], blockStarts[b + 1])`. */
    private readonly blocks: Buffer,
    private readonly blockStarts: Uint32Array,
    /** Flag `i` is bytes `[flagRanges[2i], flagRanges[2i + 1])` of its inflated block. */
    private readonly flagRanges: Uint32Array,
  ) {}

  /** The uncompressed document while someone still holds it, so concurrent readers share one. */
  private plainCache: WeakRef<Buffer> | undefined;
  private inflating: Promise<Buffer> | undefined;

  /**
   * Assembles the document exactly as `JSON.stringify` of the whole configuration would and
   * compresses it (off the event loop, in libuv's thread pool).
   *
   * @param configuration - the configuration apart from its flags
   * @param flagTexts - `JSON.stringify` of each flag, in configuration order
   */
  static async build(
    configuration: Omit<SdkConfiguration, 'flags'>,
    flagTexts: readonly string[],
  ): Promise<ConfigurationDocument> {
    const { environment, version, segments } = configuration;
    const flagRanges = new Uint32Array(2 * flagTexts.length);
    // The document goes through gzip piece by piece, never as one buffer of several megabytes:
    // buffers that size are where the allocator grows and stays grown.
    const pieces = [`{"environment":${JSON.stringify(environment)},"version":${version},"flags":[`];
    const blocks: Buffer[] = [];
    const blockStarts = new Uint32Array(Math.ceil(flagTexts.length / FLAGS_PER_BLOCK) + 1);
    for (let start = 0; start < flagTexts.length; start += FLAGS_PER_BLOCK) {
      const texts = flagTexts.slice(start, start + FLAGS_PER_BLOCK);
      let at = 0;
      texts.forEach((text, offset) => {
        flagRanges[2 * (start + offset)] = at;
        at += Buffer.byteLength(text);
        flagRanges[2 * (start + offset) + 1] = at;
      });
      pieces.push((start > 0 ? ',' : '') + texts.join(','));
      // One block at a time: each compression holds a few hundred kilobytes of zlib state.
      const block = await deflateRawAsync(texts.join(''));
      blocks.push(block);
      const index = start / FLAGS_PER_BLOCK;
      blockStarts[index + 1] = blockStarts[index]! + block.length;
    }
    pieces.push(`],"segments":${JSON.stringify(segments)}}`);
    const hash = createHash('sha256');
    for (const piece of pieces) hash.update(piece);
    return new ConfigurationDocument(
      await buffer(Readable.from(pieces).pipe(createGzip())),
      `W/"${hash.digest('base64url').slice(0, 27)}"`,
      Buffer.concat(blocks),
      blockStarts,
      flagRanges,
    );
  }

  /** The JSON of the configuration's `index`-th flag (UTF-8). */
  flagJson(index: number): Buffer {
    if (!(index >= 0 && index < this.flagRanges.length / 2)) {
      throw new RangeError(`No flag at position ${index}.`);
    }
    const block = Math.floor(index / FLAGS_PER_BLOCK);
    return inflateRawSync(
      this.blocks.subarray(this.blockStarts[block], this.blockStarts[block + 1]),
    ).subarray(this.flagRanges[2 * index], this.flagRanges[2 * index + 1]);
  }

  /**
   * The uncompressed document, for clients that do not accept gzip and for streams. Inflated on
   * demand: streams all read it at once after a change and share one copy until they have sent it.
   */
  plain(): Promise<Buffer> {
    const cached = this.plainCache?.deref();
    if (cached) return Promise.resolve(cached);
    this.inflating ??= gunzipAsync(this.gzipped).then(
      (plain) => {
        this.plainCache = new WeakRef(plain);
        this.inflating = undefined;
        return plain;
      },
      (error: unknown) => {
        this.inflating = undefined;
        throw error;
      },
    );
    return this.inflating;
  }
}
