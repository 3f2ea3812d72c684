// Changes to the manifests pnpm pack and pnpm publish write, never to what the workspace installs.
//
// The tensorflow backend of @pbrl/core-tensor runs on @tensorflow/tfjs-node or -node-gpu when the
// user installed one (src/backend.ts): in the published manifest they are optional peer
// dependencies, so npm and pnpm check a user's version without installing either. They are not in
// packages/core-tensor/package.json because pnpm installs a workspace project's peer
// dependencies, optional ones too, into the workspace, and both download libtensorflow.
const TF_NODE_PEERS = { "@tensorflow/tfjs-node": "4.22.0", "@tensorflow/tfjs-node-gpu": "4.22.0" };

module.exports = {
  hooks: {
    beforePacking(pkg) {
      if (pkg.name !== "@pbrl/core-tensor") return pkg;
      return {
        ...pkg,
        peerDependencies: { ...pkg.peerDependencies, ...TF_NODE_PEERS },
        peerDependenciesMeta: { ...pkg.peerDependenciesMeta, ...Object.fromEntries(Object.keys(TF_NODE_PEERS).map((n) => [n, { optional: true }])) },
      };
    },
  },
};
