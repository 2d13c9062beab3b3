import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Built to static files that the server serves at `/` (design record 023). Hashed file names
// under /assets/ are what lets the server cache them for a year.
export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', assetsDir: 'assets', sourcemap: false, emptyOutDir: true },
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
});
