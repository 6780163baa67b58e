// Encoding and decoding entry files (layout in entry_format.hpp): little-endian fields, bounds-checked reads.
#include "cache/entry_format.hpp"

#include "cache/file_io.hpp"

#include <fmt/format.h>
#include <xxhash.h>  // header-only: XXH_INLINE_ALL is defined for the library's sources

#include <cerrno>
#include <cstring>
#include <string_view>

namespace fa_jit::cache {
namespace {

constexpr char kMagic[8] = {'F', 'A', 'J', 'I', 'T', 'C', '0', '1'};
constexpr std::uint32_t kFlagPtx = 1;

std::uint64_t hash64(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

void put_u32(std::string& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void put_u64(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void put_str(std::string& out, std::string_view s) {
    put_u64(out, s.size());
    out.append(s);
}

std::uint64_t get_le(const char* p, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
    return v;
}

// Bounds-checked reader over the metadata; any overrun sets !ok() instead of reading past the end.
class Reader {
public:
    explicit Reader(std::string_view data) : data_(data) {}
    bool ok() const { return ok_; }
    bool at_end() const { return pos_ == data_.size(); }

    std::uint64_t u64() {
        if (!need(8)) return 0;
        const auto v = get_le(data_.data() + pos_, 8);
        pos_ += 8;
        return v;
    }
    std::string str() {
        const auto n = u64();
        if (!need(n)) return {};
        std::string s(data_.substr(pos_, n));
        pos_ += n;
        return s;
    }
    // A count of following items, each at least `min_item_bytes` long: rejects absurd counts before allocating.
    std::uint64_t count(std::size_t min_item_bytes) {
        const auto n = u64();
        if (ok_ && n > (data_.size() - pos_) / min_item_bytes) ok_ = false;
        return ok_ ? n : 0;
    }

private:
    bool need(std::uint64_t n) {
        if (ok_ && n > data_.size() - pos_) ok_ = false;
        return ok_;
    }
    std::string_view data_;
    std::size_t pos_ = 0;
    bool ok_ = true;
};

std::string encode_metadata(const EntryMetadata& m) {
    std::string out;
    put_str(out, m.key_hex);
    put_str(out, m.arch);
    put_str(out, m.kernel);
    put_str(out, m.family);
    put_u64(out, m.options.size());
    for (const auto& o : m.options) put_str(out, o);
    put_u64(out, m.lowered_names.size());
    for (const auto& [expr, mangled] : m.lowered_names) {
        put_str(out, expr);
        put_str(out, mangled);
    }
    put_str(out, m.log);
    return out;
}

bool decode_metadata(std::string_view bytes, EntryMetadata& m) {
    Reader r(bytes);
    m.key_hex = r.str();
    m.arch = r.str();
    m.kernel = r.str();
    m.family = r.str();
    for (auto n = r.count(8); r.ok() && n > 0; --n) m.options.push_back(r.str());
    for (auto n = r.count(16); r.ok() && n > 0; --n) {
        std::string expr = r.str();
        std::string mangled = r.str();
        m.lowered_names.emplace_back(std::move(expr), std::move(mangled));
    }
    m.log = r.str();
    return r.ok() && r.at_end();
}

}  // namespace

std::string encode_entry(const EntryMetadata& meta, const Compiled& compiled) {
    const std::string metadata = encode_metadata(meta);
    std::string out;
    out.reserve(kHeaderBytes + metadata.size() + compiled.binary.size());
    out.append(kMagic, sizeof kMagic);
    put_u32(out, kFormatVersion);
    put_u32(out, compiled.is_ptx ? kFlagPtx : 0);
    put_u64(out, metadata.size());
    put_u64(out, compiled.binary.size());
    put_u64(out, hash64(metadata));
    put_u64(out, hash64(compiled.binary));
    put_u64(out, hash64(out));
    out += metadata;
    out += compiled.binary;
    return out;
}

std::string read_entry(int fd, std::uint64_t file_size, bool with_payload, Entry& out) {
    if (file_size < kHeaderBytes)
        return fmt::format("truncated: {} bytes, shorter than the {}-byte header", file_size, kHeaderBytes);
    char h[kHeaderBytes];
    if (!read_exact(fd, h, kHeaderBytes, 0)) return fmt::format("cannot read the header: {}", std::strerror(errno));
    if (std::memcmp(h, kMagic, sizeof kMagic) != 0) return "not an fa_jit cache entry (wrong magic)";
    // The version is checked before the header checksum: a newer format may lay out the rest differently.
    const auto version = static_cast<std::uint32_t>(get_le(h + 8, 4));
    if (version != kFormatVersion)
        return fmt::format("stale: format version {}, this build reads version {}", version, kFormatVersion);
    if (get_le(h + 48, 8) != hash64(std::string_view(h, 48))) return "header checksum mismatch";
    const auto flags = static_cast<std::uint32_t>(get_le(h + 12, 4));
    if (flags & ~kFlagPtx) return fmt::format("unknown flags {:#x}", flags);
    out.is_ptx = (flags & kFlagPtx) != 0;

    const std::uint64_t meta_len = get_le(h + 16, 8), payload_len = get_le(h + 24, 8);
    const std::uint64_t body = file_size - kHeaderBytes;
    if (meta_len > body || payload_len > body - meta_len)
        return fmt::format("truncated: {} bytes, the header promises {}", file_size,
                           kHeaderBytes + meta_len + payload_len);
    if (meta_len + payload_len != body)
        return fmt::format("{} unexpected trailing bytes", body - meta_len - payload_len);

    std::string metadata(meta_len, '\0');
    if (!read_exact(fd, metadata.data(), meta_len, kHeaderBytes))
        return fmt::format("cannot read the metadata: {}", std::strerror(errno));
    if (get_le(h + 32, 8) != hash64(metadata)) return "metadata checksum mismatch";
    if (!decode_metadata(metadata, out.meta)) return "malformed metadata";

    if (!with_payload) return "";
    out.payload.assign(payload_len, '\0');
    if (!read_exact(fd, out.payload.data(), payload_len, kHeaderBytes + meta_len))
        return fmt::format("cannot read the payload: {}", std::strerror(errno));
    if (get_le(h + 40, 8) != hash64(out.payload)) return "payload checksum mismatch";
    return "";
}

Compiled to_compiled(Entry&& entry) {
    Compiled c;
    c.arch = std::move(entry.meta.arch);
    c.is_ptx = entry.is_ptx;
    c.binary = std::move(entry.payload);
    c.lowered_names = std::move(entry.meta.lowered_names);
    c.log = std::move(entry.meta.log);
    return c;
}

}  // namespace fa_jit::cache
