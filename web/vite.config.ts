// Vite build of the Bootlane web UI (issue 8). Output goes to `dist/`, which the
// `bootlane` binary embeds (controlplane/src/api/ui.rs). Every asset gets a content hash
// in its name (served with a one-year immutable cache), and a `.gz` and `.br` twin is
// written next to each text file so the server sends precompressed bytes with no
// compression work at run time.
import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';
import { compression, defineAlgorithm } from 'vite-plugin-compression2';

export default defineConfig({
  plugins: [
    preact(),
    compression({
      algorithms: [defineAlgorithm('gzip', { level: 9 }), defineAlgorithm('brotliCompress')],
      include: /\.(html|js|css|svg|json)$/,
      threshold: 0,
      deleteOriginalAssets: false,
    }),
  ],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    reportCompressedSize: true,
    target: 'es2022',
  },
  server: {
    proxy: { '/api': 'http://127.0.0.1:8080' },
  },
});
