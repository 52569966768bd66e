// The numerics suite's 32-bit atomics under contention (accelcore.conformance.numerics.atomics,
// docs/numerics.md "Atomics under contention"). OpenCL C 1.2 atomic functions (section 6.12.11) on
// __global int / uint. Every kernel has the same four buffers: c (17 uint counters), ci (17 int
// counters), v (one operand per work-item), o (two returned old values per work-item). Work-item i
// applies its operation twice: to c[0] / ci[0], which every work-item of the launch hammers, and to
// c[1 + i % 16] / ci[1 + i % 16], which 1/16 of them share; it stores what each call returned.
// One launch of 2^18 work-items per operation, the driver choosing the work-group size.
// The same computations in GLSL: ../glsl/numerics_atomic.comp (selected by a specialization constant).

// A ticket by compare-and-swap: the value of *p this call incremented (a CAS loop; each caller gets a
// different value, and the counter ends at its start plus the number of callers).
uint cas_ticket(volatile __global uint *p) {
    uint seen = 0u;
    for (;;) {
        uint old = atomic_cmpxchg(p, seen, seen + 1u);
        if (old == seen)
            return old;
        seen = old;
    }
}

__kernel void atomic_add_u32(__global uint *c, __global int *ci, __global const uint *v, __global uint *o) {
    size_t i = get_global_id(0);
    o[2 * i] = atomic_add(&c[0], v[i]);
    o[2 * i + 1] = atomic_add(&c[1 + (i & 15)], v[i]);
}
__kernel void atomic_min_u32(__global uint *c, __global int *ci, __global const uint *v, __global uint *o) {
    size_t i = get_global_id(0);
    o[2 * i] = atomic_min(&c[0], v[i]);
    o[2 * i + 1] = atomic_min(&c[1 + (i & 15)], v[i]);
}
__kernel void atomic_max_u32(__global uint *c, __global int *ci, __global const uint *v, __global uint *o) {
    size_t i = get_global_id(0);
    o[2 * i] = atomic_max(&c[0], v[i]);
    o[2 * i + 1] = atomic_max(&c[1 + (i & 15)], v[i]);
}
__kernel void atomic_min_i32(__global uint *c, __global int *ci, __global const uint *v, __global uint *o) {
    size_t i = get_global_id(0);
    o[2 * i] = as_uint(atomic_min(&ci[0], as_int(v[i])));
    o[2 * i + 1] = as_uint(atomic_min(&ci[1 + (i & 15)], as_int(v[i])));
}
__kernel void atomic_max_i32(__global uint *c, __global int *ci, __global const uint *v, __global uint *o) {
    size_t i = get_global_id(0);
    o[2 * i] = as_uint(atomic_max(&ci[0], as_int(v[i])));
    o[2 * i + 1] = as_uint(atomic_max(&ci[1 + (i & 15)], as_int(v[i])));
}
__kernel void atomic_xchg_u32(__global uint *c, __global int *ci, __global const uint *v, __global uint *o) {
    size_t i = get_global_id(0);
    o[2 * i] = atomic_xchg(&c[0], v[i]);
    o[2 * i + 1] = atomic_xchg(&c[1 + (i & 15)], v[i]);
}
__kernel void atomic_cmpxchg_u32(__global uint *c, __global int *ci, __global const uint *v, __global uint *o) {
    size_t i = get_global_id(0);
    o[2 * i] = cas_ticket(&c[0]);
    o[2 * i + 1] = cas_ticket(&c[1 + (i & 15)]);
}
