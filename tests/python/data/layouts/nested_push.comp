#version 450
// ncnn/ggml-style: a push-constant block holding an array of structs and a matrix.
layout(local_size_x = 1) in;
struct Affine { float scale; float shift; };
layout(push_constant) uniform Push { Affine aff[2]; uint n; mat2 m; } pc;
layout(std430, binding = 0) buffer Out { float outv[]; };
void main() { uint i = gl_GlobalInvocationID.x; if (i < pc.n) outv[i] = float(i) * pc.aff[1].scale + pc.aff[0].shift + pc.m[1][0]; }
