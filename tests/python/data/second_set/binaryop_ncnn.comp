#version 450
// Element-wise binary operation in the style of ncnn's binaryop shader: the operation is a
// specialization constant, the work-group size comes from specialization constants 233-235 (as
// ncnn sets it), and the shapes travel in a push-constant block of ints. Blobs are channel-major
// with a padded channel stride (cstep); b is either the same shape or one value per channel.

#ifndef sfp
#define sfp float
#define afp float
#endif
#define buffer_ld1(buf, i) afp(buf[i])
#define buffer_st1(buf, i, v) buf[i] = sfp(v)

layout (constant_id = 0) const int op_type = 0;

layout (local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;

layout (binding = 0) readonly buffer a_blob { sfp a_blob_data[]; };
layout (binding = 1) readonly buffer b_blob { sfp b_blob_data[]; };
layout (binding = 2) writeonly buffer top_blob { sfp top_blob_data[]; };

layout (push_constant) uniform parameter
{
    int adims;
    int aw;
    int ah;
    int ac;
    int acstep;

    int bdims;
    int bw;
    int bh;
    int bc;
    int bcstep;

    int outdims;
    int outw;
    int outh;
    int outc;
    int outcstep;
} p;

afp binary_op(afp x, afp y)
{
    if (op_type == 0) return x + y;
    if (op_type == 1) return x - y;
    if (op_type == 2) return x * y;
    if (op_type == 3) return x / y;
    if (op_type == 4) return max(x, y);
    if (op_type == 5) return min(x, y);
    return x;
}

void main()
{
    int gx = int(gl_GlobalInvocationID.x);
    int gy = int(gl_GlobalInvocationID.y);
    int gz = int(gl_GlobalInvocationID.z);

    if (gx >= p.outw || gy >= p.outh || gz >= p.outc)
        return;

    int ai = gz * p.acstep + gy * p.aw + gx;
    int bi = (p.bdims == 1) ? gz : gz * p.bcstep + gy * p.bw + gx;
    int gi = gz * p.outcstep + gy * p.outw + gx;

    afp v = binary_op(buffer_ld1(a_blob_data, ai), buffer_ld1(b_blob_data, bi));
    buffer_st1(top_blob_data, gi, v);
}
