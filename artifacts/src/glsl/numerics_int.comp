#version 450
// The numerics suite's bit-exact integer and float->int conversion shaders: the computations of
// ../opencl/numerics_int.cl in GLSL, one module, the operation chosen by the specialization
// constant FN (constant_id 0). Every invocation computes exactly one operation: r[i] = op(a[i], b[i])
// on 32-bit words (a float operand is the bit pattern a[i], read with uintBitsToFloat).
// GLSL has no mul_hi, rotate, clz or saturating add: they are written with the GLSL operations that
// compute them (umulExtended / imulExtended, shifts, findMSB, explicit overflow checks), so on Vulkan
// a case measures the GLSL expression of the operation, i.e. the compiler's integer semantics.
// Shift counts are masked to 0..31 (SPIR-V shifts by >= 32 are undefined).
layout(local_size_x = 64) in;
layout(constant_id = 0) const int FN = 0;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer R { uint r[]; };

const int IMAX = 0x7fffffff;
const int IMIN = int(0x80000000u);

void main() {
    uint i = gl_GlobalInvocationID.x;
    uint x = a[i], y = b[i];
    uint v = 0u;
    switch (FN) {
    case 0: { uint hi, lo; umulExtended(x, y, hi, lo); v = hi; break; }          // mul_hi u32
    case 1: { int hi, lo; imulExtended(int(x), int(y), hi, lo); v = uint(hi); break; } // mul_hi i32
    case 2: { uint s = y & 31u; v = (x << s) | (x >> ((32u - s) & 31u)); break; }  // rotate (count mod 32)
    case 3: v = uint(31 - findMSB(x)); break;                                     // clz (findMSB(0) = -1 -> 32)
    case 4: v = uint(bitCount(x)); break;                                         // popcount
    case 5: { uint s = x + y; v = s < x ? 0xffffffffu : s; break; }              // add_sat u32 (wraps: unsigned)
    case 6: {                                                                     // add_sat i32, no overflow
        int p = int(x), q = int(y);
        int s = q > 0 ? (p > IMAX - q ? IMAX : p + q) : (p < IMIN - q ? IMIN : p + q);
        v = uint(s);
        break;
    }
    case 7: v = uint(int(uintBitsToFloat(x))); break;                             // float -> int (OpConvertFToS)
    case 8: v = uint(uintBitsToFloat(x)); break;                                  // float -> uint (OpConvertFToU)
    }
    r[i] = v;
}
