// The configuration is in tools/lint (its workspace has the TypeScript version typescript-eslint needs).
export { default } from './tools/lint/eslint.config.js'
