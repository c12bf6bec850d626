export { FakeNft, type FakeNftOptions } from './fake-nft.js';
