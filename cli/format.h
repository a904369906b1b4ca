/* format.h: sizes, durations, times and command lines as people read them in cgorchctl's output. */
#pragma once

#include <stdint.h>

#define FORMAT_MAX 48

/* "512B", "1KiB", "1.5MiB", "23.3GiB" (powers of 1024, at most one decimal). */
char *format_bytes(uint64_t bytes, char buf[static FORMAT_MAX]);

/* "250ms", "12.3s", "5m03s", "2h07m", "3d04h"; "-" for a negative or non-finite value. */
char *format_duration_s(double s, char buf[static FORMAT_MAX]);

/* Local time as "2026-01-31T14:05:09" (one token, like Slurm's); "-" for ms < 0. */
char *format_timestamp_ms(int64_t ms, char buf[static FORMAT_MAX]);

/* How long ago then_ms was, seen at now_ms: "3.2s ago", "5m03s ago"; a time in the future
 * (clocks of different machines) shows as "just now". */
char *format_age_ms(int64_t now_ms, int64_t then_ms, char buf[static FORMAT_MAX]);

/* "0.5", "2", "1.25": a CPU count without trailing zeros. */
char *format_cpus(double cpus, char buf[static FORMAT_MAX]);

/* The argv as one shell-quoted line a person can paste: arguments with characters special to
 * the shell are put in single quotes. Returns a malloc'd string or NULL when out of memory. */
char *format_argv(char *const *argv);
