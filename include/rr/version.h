/* The version `resume-run --version` prints and the metrics' build-info gauge carries. */
#ifndef RR_VERSION_H
#define RR_VERSION_H

#ifndef RR_VERSION
#define RR_VERSION "0.1.0"
#endif

#endif
