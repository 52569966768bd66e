#ifndef PUBLIC_STYLE_COMMON_H
#define PUBLIC_STYLE_COMMON_H
/* Rodinia style: the block size lives in a header next to the kernel. */
#define BLOCK_SIZE 16
#define IDX(row, col, width) ((row) * (width) + (col))
#endif
