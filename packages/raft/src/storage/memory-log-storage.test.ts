import { logStorageCompliance } from '../compliance/index.ts';
import { ManualSyncLogStorage } from './manual-sync-log-storage.ts';
import { MemoryLogStorage } from './memory-log-storage.ts';

logStorageCompliance('MemoryLogStorage', {
  open: () => new MemoryLogStorage(),
  reopen: (storage) => storage, // the object is the disk
});

logStorageCompliance('ManualSyncLogStorage (auto sync)', {
  open: () => new ManualSyncLogStorage({ mode: 'auto' }),
  reopen: (storage) =>
    new ManualSyncLogStorage({ mode: 'auto', durable: (storage as ManualSyncLogStorage).durable }),
});
