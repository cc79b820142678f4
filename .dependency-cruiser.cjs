/**
 * The import-cycle check `npm test` runs over src/: any cycle fails the build.
 * Type-only imports count too (tsPreCompilationDeps), because a cycle of types
 * is still two modules that cannot be understood one without the other.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A module may not import, directly or through others, a module that imports it.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
