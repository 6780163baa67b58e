// The entry file format: encoding an entry, and reading one back with every check (magic, version, checksums,
// lengths). Entry format (all integers little-endian):
//   offset  0  magic "FAJITC01"
//           8  u32 format version (kFormatVersion)
//          12  u32 flags (bit 0: payload is PTX, else cubin)
//          16  u64 metadata length
//          24  u64 payload length
//          32  u64 XXH3-64 of the metadata
//          40  u64 XXH3-64 of the payload
//          48  u64 XXH3-64 of bytes 0..47 (so a flipped flag or length is caught too)
//          56  metadata: length-prefixed strings (key hex, arch, kernel, family, options, lowered names, NVRTC log)
//              payload: the cubin or PTX
#pragma once

#include "fa_jit/jit.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fa_jit::cache {

// Bumped whenever the layout above changes. An entry of another version is reported once as stale, removed and
// recompiled (the key does not change with it: see kKeyVersion). 2: the metadata gained the kernel family.
inline constexpr std::uint32_t kFormatVersion = 2;
inline constexpr std::size_t kHeaderBytes = 56;

struct EntryMetadata {
    std::string key_hex;
    std::string arch;
    std::string kernel;
    std::string family;
    std::vector<std::string> options;
    std::vector<std::pair<std::string, std::string>> lowered_names;
    std::string log;
};

struct Entry {
    bool is_ptx = false;
    EntryMetadata meta;
    std::string payload;  // empty unless read with the payload
};

// The bytes of the entry file holding `compiled`, described by `meta`.
std::string encode_entry(const EntryMetadata& meta, const Compiled& compiled);

// Reads and verifies the entry open on `fd` (of `file_size` bytes). Returns why it is bad, or "" when it verified.
// The payload is read (and its checksum checked) only when `with_payload`: listing need not read every binary.
std::string read_entry(int fd, std::uint64_t file_size, bool with_payload, Entry& out);

// The kernel an entry read with its payload holds (moved out of `entry`).
Compiled to_compiled(Entry&& entry);

}  // namespace fa_jit::cache
