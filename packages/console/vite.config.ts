import react from '@vitejs/plugin-react';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

/**
 * Writes a Brotli (`.br`) and a gzip (`.gz`) copy beside every hashed script and style, which the
 * server sends as they are to a browser that accepts them (design record 037): compressing once
 * at build time allows the slowest, smallest settings, which per-request compression could not
 * afford.
 */
function precompress(): Plugin {
  return {
    name: 'vexil-precompress',
    apply: 'build',
    // After the files are written: earlier hooks see chunks before Vite's own last rewrites
    // (the preload helper's placeholder), and a copy made then would differ from its original.
    writeBundle(options, bundle) {
      for (const file of Object.values(bundle)) {
        if (!/^assets\/.+\.(js|css|svg)$/.test(file.fileName)) continue;
        const path = join(options.dir ?? 'dist', file.fileName);
        const source = readFileSync(path);
        writeFileSync(
          `${path}.br`,
          brotliCompressSync(source, {
            params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY },
          }),
        );
        writeFileSync(`${path}.gz`, gzipSync(source, { level: 9 }));
      }
    },
  };
}

// Built to static files that the server serves at `/` (design record 023). Hashed file names
// under /assets/ are what lets the server cache them for a year.
export default defineConfig({
  plugins: [react(), precompress()],
  build: { outDir: 'dist', assetsDir: 'assets', sourcemap: false, emptyOutDir: true },
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
});
