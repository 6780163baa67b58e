// The in-process table of loaded kernels (Value: a Kernel, or a Kernel with what was decided to load it).
// Concurrent callers of one key wait for a single build; different keys build concurrently; a hit takes one
// shard's shared lock, allocates nothing and returns a reference that stays valid for the life of the table
// (entries are never removed).
#pragma once

#include "fa_jit/jit.hpp"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace fa_jit::cache {

template <typename Key, typename Value, typename Hash = std::hash<Key>>
class KernelTable {
public:
    // Returns the value for `key`, calling `build()` (which returns a Value) if this is the first request.
    // If build() throws, the exception reaches the caller and the next request tries again.
    template <typename Build>
    const Value& get(const Key& key, Build&& build) {
        const std::size_t h = Hash{}(key);
        Shard& shard = shards_[h % kShards];
        Slot* slot = nullptr;
        {
            std::shared_lock lock(shard.mutex);
            if (auto it = shard.slots.find(key); it != shard.slots.end()) slot = it->second.get();
        }
        if (slot && slot->ready.load(std::memory_order_acquire)) return slot->value;
        if (!slot) {
            std::unique_lock lock(shard.mutex);
            auto& owned = shard.slots[key];
            if (!owned) owned = std::make_unique<Slot>();
            slot = owned.get();
        }
        // Only this key's callers wait here; the shard lock is not held while building.
        std::call_once(slot->once, [&] {
            slot->value = build();
            slot->ready.store(true, std::memory_order_release);
        });
        return slot->value;
    }

private:
    static constexpr std::size_t kShards = 16;
    struct Slot {
        std::once_flag once;
        std::atomic<bool> ready{false};
        Value value;
    };
    struct Shard {
        std::shared_mutex mutex;
        std::unordered_map<Key, std::unique_ptr<Slot>, Hash> slots;
    };
    std::array<Shard, kShards> shards_;
};

}  // namespace fa_jit::cache
