#include "common/element_types.hpp"

#include <cmath>
#include <cstring>

namespace fa_jit::tools {
namespace {

std::uint32_t bits_of(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
float float_of(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

}  // namespace

std::uint16_t float_to_half(float value) {
    const std::uint32_t x = bits_of(value);
    const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return sign | 0x7c00u | (abs > 0x7f800000u ? 0x0200u : 0u);  // inf, quiet NaN
    if (abs < 0x38800000u) {
        // Below 2^-14: a subnormal half, in units of 2^-24. Scaling by a power of two is exact, and nearbyint
        // rounds to nearest even in the default rounding mode; 1024 units is the smallest normal, encoded alike.
        return sign | static_cast<std::uint16_t>(std::nearbyint(float_of(abs) * 16777216.0f));
    }
    // Normal: rebias the exponent (127 -> 15), keep 10 of 23 mantissa bits, round the 13 dropped ones.
    std::uint32_t h = ((abs >> 23) - 112u) << 10 | ((abs >> 13) & 0x3ffu);
    const std::uint32_t dropped = abs & 0x1fffu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
    if (h >= 0x7c00u) return sign | 0x7c00u;                          // overflow: infinity
    return sign | static_cast<std::uint16_t>(h);
}

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
        const float magnitude = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
        return sign ? -magnitude : magnitude;
    }
    if (exp == 31) return float_of(sign | 0x7f800000u | (mant << 13));  // inf, NaN
    return float_of(sign | ((exp + 112u) << 23) | (mant << 13));
}

std::uint16_t float_to_bfloat16(float value) {
    const std::uint32_t x = bits_of(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    // Add just under half an ulp, plus one when the kept part is odd: ties go to even; overflow becomes inf.
    return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bfloat16_to_float(std::uint16_t bits) { return float_of(std::uint32_t(bits) << 16); }

std::string encode(const std::vector<float>& values, DType dtype) {
    std::string out(values.size() * element_size(dtype), '\0');
    if (dtype == DType::f32) {
        std::memcpy(out.data(), values.data(), out.size());
        return out;
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
        const std::uint16_t b = dtype == DType::f16 ? float_to_half(values[i]) : float_to_bfloat16(values[i]);
        std::memcpy(out.data() + 2 * i, &b, 2);
    }
    return out;
}

std::vector<float> decode(const std::string& bytes, DType dtype) {
    const std::size_t n = bytes.size() / element_size(dtype);
    std::vector<float> out(n);
    if (dtype == DType::f32) {
        std::memcpy(out.data(), bytes.data(), n * sizeof(float));
        return out;
    }
    for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t b;
        std::memcpy(&b, bytes.data() + 2 * i, 2);
        out[i] = dtype == DType::f16 ? half_to_float(b) : bfloat16_to_float(b);
    }
    return out;
}

}  // namespace fa_jit::tools
