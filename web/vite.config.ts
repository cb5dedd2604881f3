// Vite build of the Bootlane web UI. Output goes to `dist/`, which the `bootlane` binary
// embeds (controlplane/src/api/ui.rs). Every asset gets a content hash in its name
// (served with a one-year immutable cache), and a `.gz` and `.br` twin is written next
// to each text file so the server sends precompressed bytes with no compression work at
// run time.
import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';
import { compression, defineAlgorithm } from 'vite-plugin-compression2';
import { gzipSync } from 'node:zlib';
import type { Plugin } from 'vite';

/** Size budget: the JS and CSS the first page load needs, gzip, under 150 KB. */
const BUDGET_BYTES = 150 * 1024;

function sizeBudget(): Plugin {
  return {
    name: 'bootlane-size-budget',
    apply: 'build',
    generateBundle(_, bundle) {
      let total = 0;
      for (const f of Object.values(bundle)) {
        const initial = f.type === 'chunk' ? f.isEntry : /\.css$/.test(f.fileName);
        if (!initial) continue;
        total += gzipSync(f.type === 'chunk' ? f.code : f.source).length;
      }
      const kb = (total / 1024).toFixed(1);
      if (total > BUDGET_BYTES) this.error(`initial JS + CSS is ${kb} KB gzip, over the 150 KB budget`);
      console.log(`size budget: initial JS + CSS ${kb} KB gzip (budget 150 KB)`);
    },
  };
}

export default defineConfig({
  plugins: [
    preact(),
    sizeBudget(),
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
