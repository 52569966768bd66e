#version 450
// Kompute/ggml-style: a storage block whose members come before its runtime array.
layout(local_size_x = 1) in;
layout(std430, binding = 0) readonly buffer In { uint count; float scale; float data[]; };
layout(std430, binding = 1) writeonly buffer Out { float outv[]; };
void main() { uint i = gl_GlobalInvocationID.x; outv[i] = i < count ? data[i] * scale : -1.0; }
