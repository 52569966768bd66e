// The numerics suite's subgroup kernels (accelcore.conformance.numerics.features, docs/numerics.md
// "Subgroups"): one work-group size (64, fixed by reqd_work_group_size), one launch per case.
// Needs cl_khr_subgroups (OpenCL C 2.0) or the OpenCL C 3.0 feature __opencl_c_subgroups; the case
// builds with -cl-std=CL3.0 or -cl-std=CL2.0 as the device reports (tools/build_artifacts.py checks
// this file with clang-15 -cl-std=CL3.0). The same computations in GLSL: ../glsl/numerics_subgroup.comp
// (ids and sizes), numerics_subgroup_arith.comp (sums), numerics_subgroup_ballot.comp (broadcast).
#ifdef cl_khr_subgroups
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif

// Per work-item: this sub-group's size, the largest sub-group size, the number of sub-groups, this
// sub-group's id and this work-item's id in it.
__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void sg_ids(__global uint *r) {
    size_t i = get_global_id(0);
    r[5 * i] = get_sub_group_size();
    r[5 * i + 1] = get_max_sub_group_size();
    r[5 * i + 2] = get_num_sub_groups();
    r[5 * i + 3] = get_sub_group_id();
    r[5 * i + 4] = get_sub_group_local_id();
}
// Per work-item: the sub-group's sum of a (wrapping uint), the inclusive prefix sum up to this
// work-item, and the sub-group id and local id (so the host can form the same groups).
__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void sg_add(__global const uint *a, __global uint *r) {
    size_t i = get_global_id(0);
    uint x = a[i];
    r[4 * i] = sub_group_reduce_add(x);
    r[4 * i + 1] = sub_group_scan_inclusive_add(x);
    r[4 * i + 2] = get_sub_group_id();
    r[4 * i + 3] = get_sub_group_local_id();
}
// Per work-item: the value of the sub-group's first work-item (broadcast from local id 0), and the ids.
__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void sg_broadcast(__global const uint *a,
                                                                           __global uint *r) {
    size_t i = get_global_id(0);
    uint x = a[i];
    r[4 * i] = sub_group_broadcast(x, 0);
    r[4 * i + 1] = 0;
    r[4 * i + 2] = get_sub_group_id();
    r[4 * i + 3] = get_sub_group_local_id();
}
