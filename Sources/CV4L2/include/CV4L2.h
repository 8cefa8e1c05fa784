#ifndef RECD_CV4L2_H
#define RECD_CV4L2_H
// V4L2 from Swift: only what Swift's importer cannot reach. The VIDIOC_* request numbers are
// function-like macros (_IOR/_IOWR) that Swift drops, ioctl(2) is variadic, and mmap's MAP_FAILED
// is a cast macro. The structs (v4l2_capability, v4l2_format, v4l2_buffer, ...) import as they are.
// Everything else (negotiation, the buffer ring, the capture loop) is Swift. Every symbol is CV4L2_.
#include <linux/videodev2.h>
#include <stddef.h>
#include <sys/types.h>

/// The VIDIOC_* requests recd uses, as numbers Swift can pass to CV4L2_ioctl.
extern const unsigned long CV4L2_VIDIOC_QUERYCAP;
extern const unsigned long CV4L2_VIDIOC_ENUM_FMT;
extern const unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES;
extern const unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS;
extern const unsigned long CV4L2_VIDIOC_G_FMT;
extern const unsigned long CV4L2_VIDIOC_S_FMT;
extern const unsigned long CV4L2_VIDIOC_TRY_FMT;
extern const unsigned long CV4L2_VIDIOC_G_PARM;
extern const unsigned long CV4L2_VIDIOC_S_PARM;
extern const unsigned long CV4L2_VIDIOC_REQBUFS;
extern const unsigned long CV4L2_VIDIOC_QUERYBUF;
extern const unsigned long CV4L2_VIDIOC_QBUF;
extern const unsigned long CV4L2_VIDIOC_DQBUF;
extern const unsigned long CV4L2_VIDIOC_STREAMON;
extern const unsigned long CV4L2_VIDIOC_STREAMOFF;

/// ioctl(fd, request, arg), retried while it fails with EINTR. Returns ioctl's result; errno is set
/// on -1 as by ioctl.
int CV4L2_ioctl(int fd, unsigned long request, void *arg);

/// mmap(NULL, length, PROT_READ|PROT_WRITE, MAP_SHARED, fd, offset) for a V4L2 buffer.
/// Returns NULL (not MAP_FAILED) on failure, errno set.
void *CV4L2_mmap(int fd, size_t length, off_t offset);

/// munmap(start, length). Returns 0 or -1 with errno set.
int CV4L2_munmap(void *start, size_t length);

#endif
