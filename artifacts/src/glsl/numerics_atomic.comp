#version 450
// The numerics suite's 32-bit atomics under contention: the computations of
// ../opencl/numerics_atomic.cl in GLSL (atomicAdd / atomicMin / atomicMax / atomicExchange /
// atomicCompSwap on storage buffers), one module, the operation chosen by the specialization constant
// FN (constant_id 0). Invocation i applies its operation to c[0] / ci[0] (every invocation of the
// launch) and to c[1 + i % 16] / ci[1 + i % 16] (1/16 of them) and stores both returned values.
layout(local_size_x = 64) in;
layout(constant_id = 0) const int FN = 0;
layout(std430, binding = 0) coherent buffer C { uint c[]; };
layout(std430, binding = 1) coherent buffer CI { int ci[]; };
layout(std430, binding = 2) readonly buffer V { uint v[]; };
layout(std430, binding = 3) writeonly buffer O { uint o[]; };

// A ticket by compare-and-swap: the value of c[k] this call incremented.
uint cas_ticket(uint k) {
    uint seen = 0u;
    for (;;) {
        uint old = atomicCompSwap(c[k], seen, seen + 1u);
        if (old == seen)
            return old;
        seen = old;
    }
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    uint k = 1u + (i & 15u);
    uint x = v[i];
    uint first = 0u, second = 0u;
    switch (FN) {
    case 0: first = atomicAdd(c[0], x); second = atomicAdd(c[k], x); break;                            // add u32
    case 1: first = atomicMin(c[0], x); second = atomicMin(c[k], x); break;                            // min u32
    case 2: first = atomicMax(c[0], x); second = atomicMax(c[k], x); break;                            // max u32
    case 3: first = uint(atomicMin(ci[0], int(x))); second = uint(atomicMin(ci[k], int(x))); break;    // min i32
    case 4: first = uint(atomicMax(ci[0], int(x))); second = uint(atomicMax(ci[k], int(x))); break;    // max i32
    case 5: first = atomicExchange(c[0], x); second = atomicExchange(c[k], x); break;                  // xchg u32
    case 6: first = cas_ticket(0u); second = cas_ticket(k); break;                                     // cmpxchg u32
    }
    o[2u * i] = first;
    o[2u * i + 1u] = second;
}
