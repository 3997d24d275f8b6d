import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// `npm run dev` serves the app on :5173 and forwards the API to a gateway, so the page and the API
// share an origin and no CORS setup is needed. PROMPTGATE_URL points it at another gateway.
const gateway = process.env.PROMPTGATE_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [react()],
  server: { proxy: { '/v1': { target: gateway, changeOrigin: true } } },
  build: { outDir: 'dist', sourcemap: false, chunkSizeWarningLimit: 900 },
});
