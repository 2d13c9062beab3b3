import { createHash, hash } from 'node:crypto';
import { promisify } from 'node:util';
import { constants, createDeflateRaw, gzip, inflateRaw, inflateRawSync } from 'node:zlib';
import type { SdkFlag, SdkSegment } from '@vexil/engine';

const gzipAsync = promisify(gzip);
const inflateRawAsync = promisify(inflateRaw);

/**
 * Flags per separately compressed block. Reading one flag inflates its whole block (about 25 KB
 * of JSON for typical flags, some tens of microseconds); larger blocks compress better.
 */
const FLAGS_PER_BLOCK = 32;

/**
 * An environment's server-SDK configuration (`GET /v1/sdk/flags`), serialized once per version
 * and held only compressed (design record 012): its flags in small deflated blocks, so that one
 * flag can be read (for `GET /v1/sdk/flags/{key}` and for compiling it) without inflating the
 * whole document. At ten thousand flags the JSON is several megabytes per environment; compressed
 * it is a few hundred kilobytes. The whole document is written from the blocks when it is first
 * asked for, and gzipped once for the downloads that accept it (design record 061): a change that
 * reaches SDKs as patches and no download costs no compression of the whole.
 */
export class ConfigurationDocument {
  /** Use {@link ConfigurationDocumentWriter}. */
  constructor(
    /** Weak validator (`W/"…"`): the same for every content coding of the document. */
    readonly etag: string,
    /**
     * The flags as one raw deflate stream, fully flushed after every block so that each block
     * inflates on its own: block `b` is bytes `[blockStarts[b], blockStarts[b + 1])`.
     */
    private readonly blocks: Buffer,
    private readonly blockStarts: Uint32Array,
    /** Flag `i` is bytes `[flagRanges[2i], flagRanges[2i + 1])` of its inflated block. */
    private readonly flagRanges: Uint32Array,
    /** The document's text before its flags (`{"environment":…,"flags":[`) and after them. */
    private readonly head: string,
    private readonly tail: string,
  ) {}

  /** The block inflated last: compiling flags in order reads each block once, not once a flag. */
  private lastBlock: { index: number; inflated: Buffer } | undefined;
  /** The uncompressed document while someone still holds it, so concurrent readers share one. */
  private plainCache: WeakRef<Buffer> | undefined;
  private inflating: Promise<Buffer> | undefined;
  /** The gzipped document, once a download has asked for it. */
  private gzipping: Promise<Buffer> | undefined;

  /** The JSON of the configuration's `index`-th flag (UTF-8). */
  flagJson(index: number): Buffer {
    if (!(index >= 0 && index < this.flagRanges.length / 2)) {
      throw new RangeError(`No flag at position ${index}.`);
    }
    const block = Math.floor(index / FLAGS_PER_BLOCK);
    if (this.lastBlock?.index !== block) {
      const bytes = this.blocks.subarray(this.blockStarts[block], this.blockStarts[block + 1]);
      // A block ends at a flush point, not at the end of a deflate stream.
      const inflated = inflateRawSync(bytes, { finishFlush: constants.Z_SYNC_FLUSH });
      this.lastBlock = { index: block, inflated };
    }
    return this.lastBlock.inflated.subarray(
      this.flagRanges[2 * index],
      this.flagRanges[2 * index + 1],
    );
  }

  /**
   * The uncompressed document, for clients that do not accept gzip and for streams. Written from
   * the blocks on demand: streams all read it at once after a change and share one copy until
   * they have sent it.
   */
  plain(): Promise<Buffer> {
    const cached = this.plainCache?.deref();
    if (cached) return Promise.resolve(cached);
    this.inflating ??= this.assemble().then(
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

  /** The document gzip-compressed, as SDKs download it: compressed once, when first asked for. */
  gzipped(): Promise<Buffer> {
    this.gzipping ??= this.plain()
      .then((plain) => gzipAsync(plain))
      .catch((error: unknown) => {
        this.gzipping = undefined;
        throw error;
      });
    return this.gzipping;
  }

  /** The whole document: the head, each block's flags separated by commas, the tail. */
  private async assemble(): Promise<Buffer> {
    const parts: Buffer[] = [Buffer.from(this.head)];
    const comma = Buffer.from(',');
    let flag = 0;
    for (let block = 0; block + 1 < this.blockStarts.length; block++) {
      const bytes = this.blocks.subarray(this.blockStarts[block], this.blockStarts[block + 1]);
      // A block ends at a flush point, not at the end of a deflate stream.
      const inflated = await inflateRawAsync(bytes, { finishFlush: constants.Z_SYNC_FLUSH });
      for (let i = 0; i < FLAGS_PER_BLOCK && 2 * flag < this.flagRanges.length; i++, flag++) {
        if (flag > 0) parts.push(comma);
        parts.push(inflated.subarray(this.flagRanges[2 * flag], this.flagRanges[2 * flag + 1]));
      }
    }
    parts.push(Buffer.from(this.tail));
    return Buffer.concat(parts);
  }
}

/**
 * Writes a {@link ConfigurationDocument} as the configuration is read: the environment first,
 * then its flags page by page, then its segments. Each block of flags is compressed as soon as it
 * is full, so a large environment's JSON never exists whole: neither its text nor buffers of
 * several megabytes, which are where the allocator grows and stays grown. The document is exactly
 * `JSON.stringify` of the whole configuration; its ETag is a digest of that text, taken as it is
 * written.
 */
export class ConfigurationDocumentWriter {
  /** The flags' keys in document order. */
  readonly flagKeys: string[] = [];
  /**
   * A digest of each of {@link flagKeys}' JSON: what tells two documents' flags apart (a flag
   * deleted and created again can come back with the same `version`).
   */
  readonly flagDigests: string[] = [];
  private readonly hash = createHash('sha256');
  private head = '';
  /** One compressor for every block (a full flush ends each): thousands would churn the allocator. */
  private readonly blockStream = createDeflateRaw();
  private readonly blocks: Buffer[] = [];
  private blocksLength = 0;
  private readonly blockStarts = [0];
  private readonly flagRanges: number[] = [];
  /** JSON of the flags of the block being filled. */
  private blockTexts: string[] = [];

  constructor() {
    this.blockStream.on('data', (chunk: Buffer) => {
      this.blocks.push(chunk);
      this.blocksLength += chunk.length;
    });
  }

  /** Starts the document: `{"environment":…,"version":…,"flags":[`. */
  begin(environment: string, version: number): void {
    this.head = `{"environment":${JSON.stringify(environment)},"version":${version},"flags":[`;
    this.hash.update(this.head);
  }

  /** Appends flags (in configuration order); resolves once every full block is compressed. */
  async addFlags(flags: readonly SdkFlag[]): Promise<void> {
    for (const flag of flags) await this.addFlagJson(flag.key, JSON.stringify(flag));
  }

  /**
   * Appends one flag already serialized: `json` must be `JSON.stringify` of the flag, as
   * {@link ConfigurationDocument.flagJson} returns it, so that the document's bytes are the same
   * whichever way a flag came in.
   */
  async addFlagJson(key: string, json: string): Promise<void> {
    this.flagKeys.push(key);
    this.flagDigests.push(hash('sha1', json, 'base64'));
    this.blockTexts.push(json);
    if (this.blockTexts.length === FLAGS_PER_BLOCK) await this.closeBlock();
  }

  /** Ends the document with the segments and returns it once its flags are compressed. */
  async finish(segments: readonly SdkSegment[]): Promise<ConfigurationDocument> {
    if (this.blockTexts.length > 0) await this.closeBlock();
    const tail = `],"segments":${JSON.stringify(segments)}}`;
    this.hash.update(tail);
    this.blockStream.destroy();
    return new ConfigurationDocument(
      `W/"${this.hash.digest('base64url').slice(0, 27)}"`,
      Buffer.concat(this.blocks),
      Uint32Array.from(this.blockStarts),
      Uint32Array.from(this.flagRanges),
      this.head,
      tail,
    );
  }

  private async closeBlock(): Promise<void> {
    const texts = this.blockTexts;
    this.blockTexts = [];
    let at = 0;
    for (const text of texts) {
      this.flagRanges.push(at);
      at += Buffer.byteLength(text);
      this.flagRanges.push(at);
    }
    this.hash.update((this.blockStarts.length > 1 ? ',' : '') + texts.join(','));
    this.blockStream.write(texts.join(''));
    await new Promise<void>((resolve) => this.blockStream.flush(constants.Z_FULL_FLUSH, resolve));
    this.blockStarts.push(this.blocksLength);
  }
}
