// Shared between shaders (Sascha Willems' examples keep such helpers in included files).
#define TAPS 3
float weight_scale() { return 1.0; }
