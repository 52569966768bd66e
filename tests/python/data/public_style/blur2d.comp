#version 450
#extension GL_GOOGLE_include_directive : require
#include "blur_params.glsl"
// An image-style 2-D filter on buffers: 16x16 work-groups, the weights in a std140 uniform block
// (a float array there has a 16-byte stride).
layout (local_size_x = 16, local_size_y = 16) in;
layout (std430, set = 0, binding = 0) readonly buffer Src { float src[]; };
layout (std430, set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
layout (std140, set = 0, binding = 2) uniform Filter { float weights[TAPS * TAPS]; uint width; uint height; } filt;

void main() {
    uvec2 p = gl_GlobalInvocationID.xy;
    if (p.x >= filt.width || p.y >= filt.height) return;
    float acc = 0.0;
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            int x = clamp(int(p.x) + dx, 0, int(filt.width) - 1);
            int y = clamp(int(p.y) + dy, 0, int(filt.height) - 1);
            acc += src[y * int(filt.width) + x] * filt.weights[(dy + 1) * TAPS + dx + 1];
        }
    }
    dst[p.y * filt.width + p.x] = acc * weight_scale();
}
