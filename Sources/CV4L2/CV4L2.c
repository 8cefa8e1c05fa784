#include "CV4L2.h"
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

const unsigned long CV4L2_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
const unsigned long CV4L2_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
const unsigned long CV4L2_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
const unsigned long CV4L2_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
const unsigned long CV4L2_VIDIOC_G_FMT = VIDIOC_G_FMT;
const unsigned long CV4L2_VIDIOC_S_FMT = VIDIOC_S_FMT;
const unsigned long CV4L2_VIDIOC_TRY_FMT = VIDIOC_TRY_FMT;
const unsigned long CV4L2_VIDIOC_G_PARM = VIDIOC_G_PARM;
const unsigned long CV4L2_VIDIOC_S_PARM = VIDIOC_S_PARM;
const unsigned long CV4L2_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
const unsigned long CV4L2_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
const unsigned long CV4L2_VIDIOC_QBUF = VIDIOC_QBUF;
const unsigned long CV4L2_VIDIOC_DQBUF = VIDIOC_DQBUF;
const unsigned long CV4L2_VIDIOC_STREAMON = VIDIOC_STREAMON;
const unsigned long CV4L2_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;

int CV4L2_ioctl(int fd, unsigned long request, void *arg) {
    int rc;
    do {
        rc = ioctl(fd, request, arg);
    } while (rc == -1 && errno == EINTR);
    return rc;
}

void *CV4L2_mmap(int fd, size_t length, off_t offset) {
    void *p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
    return p == MAP_FAILED ? NULL : p;
}

int CV4L2_munmap(void *start, size_t length) {
    return munmap(start, length);
}
