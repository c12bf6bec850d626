import { kvStoreContract } from '../testing-internal/kv-store-contract.js';
import { MemoryKVStore } from './memory-kv-store.js';

const store = new MemoryKVStore();
kvStoreContract('MemoryKVStore', { store: () => store, compact: (r) => store.compact(r) });
