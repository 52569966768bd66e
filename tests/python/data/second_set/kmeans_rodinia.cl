/* K-means assignment step, written in the style of Rodinia's OpenCL kmeans: the features arrive
 * point-major and are first swapped to feature-major ("kmeans_swap"), then every point finds its
 * nearest centre ("kmeans_kernel_c"). Sizes are plain ints, as Rodinia passes them. */

#ifndef FLT_MAX
#define FLT_MAX 3.40282347e+38f
#endif

__kernel void kmeans_swap(__global float *feature,
                          __global float *feature_swap,
                          int npoints,
                          int nfeatures)
{
    unsigned int tid = get_global_id(0);
    if (tid >= npoints)          /* the host rounds the global size up to whole work-groups */
        return;
    for (int f = 0; f < nfeatures; f++)
        feature_swap[f * npoints + tid] = feature[tid * nfeatures + f];
}

__kernel void kmeans_kernel_c(__global float *feature,    /* [nfeatures][npoints] */
                              __global float *clusters,   /* [nclusters][nfeatures] */
                              __global int *membership,   /* [npoints] */
                              int npoints,
                              int nclusters,
                              int nfeatures,
                              int offset,
                              int size)
{
    unsigned int point_id = get_global_id(0);
    int index = 0;

    if (point_id < npoints) {
        float min_dist = FLT_MAX;
        for (int c = 0; c < nclusters; c++) {
            float dist = 0.0f;
            for (int f = 0; f < nfeatures; f++) {
                float diff = feature[f * npoints + point_id] - clusters[c * nfeatures + f];
                dist += diff * diff;
            }
            if (dist < min_dist) {
                min_dist = dist;
                index = c;
            }
        }
        membership[point_id] = index;
    }
}
