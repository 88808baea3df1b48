declare module 'cluster-key-slot' {
  /** The Redis Cluster slot (0-16383) of a key, honouring {hash tags}. */
  export default function calculateSlot(key: string): number
}
