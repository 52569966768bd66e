/* Nearest-neighbour distances in the style of Rodinia's nn: an array of LatLong records and the
 * query point passed as two floats. */

typedef struct latLong {
    float lat;
    float lng;
} LatLong;

__kernel void NearestNeighbor(__global LatLong *d_locations,
                              __global float *d_distances,
                              const int numRecords,
                              const float lat,
                              const float lng)
{
    int globalId = get_global_id(0);
    if (globalId < numRecords) {
        __global LatLong *rec = d_locations + globalId;
        float dlat = lat - rec->lat;
        float dlng = lng - rec->lng;
        d_distances[globalId] = (float)sqrt(dlat * dlat + dlng * dlng);
    }
}
