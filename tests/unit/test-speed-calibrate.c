/* test-speed-calibrate.c: the calibration burn of --speed auto (its chain, against values
 * computed apart in Python), the speed class of a rate (quarter octaves around the reference,
 * clamped), the measurement's contract (no timing is asserted) and --speed's parsing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>

#include "speed-calibrate.h"

Test(speed_calibrate, burn_is_one_chain) {
        cr_expect_eq(speed_burn(42, 0), 42);
        /* (x * 6364136223846793005 + 1442695040888963407) mod 2^64, then x ^= x >> 29 */
        cr_expect_eq(speed_burn(0, 1), UINT64_C(0x14057b7e574c5ab8));
        cr_expect_eq(speed_burn(7, 1000), UINT64_C(0x48241c17b3cf9b92));
        cr_expect_eq(speed_burn(speed_burn(7, 400), 600), speed_burn(7, 1000));
}

static double class_of(double rate) {
        double speed = -1;
        cr_assert_eq(speed_class(rate, &speed), 0, "rate %g", rate);
        return speed;
}

Test(speed_calibrate, class) {
        double ref = SPEED_REFERENCE_ITERATIONS_PER_S;

        cr_expect_float_eq(class_of(ref), 1, 1e-12);
        cr_expect_float_eq(class_of(ref / 2), 0.5, 1e-12);
        cr_expect_float_eq(class_of(ref * 2), 2, 1e-12);
        /* Within an eighth of an octave (≈ 9 %) of a class: that class. */
        cr_expect_float_eq(class_of(ref * 1.08), 1, 1e-12);
        cr_expect_float_eq(class_of(ref * 0.93), 1, 1e-12);
        cr_expect_float_eq(class_of(ref * 1.2), pow(2, 0.25), 1e-12);
        cr_expect_float_eq(class_of(ref * 0.7), pow(2, -0.5), 1e-12);
        /* Kept within the protocol's range. */
        cr_expect_float_eq(class_of(1), SPEED_CLASS_MIN, 1e-12);
        cr_expect_float_eq(class_of(1e15), SPEED_CLASS_MAX, 1e-9);

        double untouched = 3;
        cr_expect_eq(speed_class(0, &untouched), -EINVAL);
        cr_expect_eq(speed_class(-1, &untouched), -EINVAL);
        cr_expect_eq(speed_class(NAN, &untouched), -EINVAL);
        cr_expect_eq(speed_class(INFINITY, &untouched), -EINVAL);
        cr_expect_eq(untouched, 3);
}

Test(speed_calibrate, measure) {
        double rate = -1;

        cr_expect_eq(speed_measure(0, &rate), -EINVAL);
        cr_expect_eq(rate, -1);
        cr_assert_eq(speed_measure(2, &rate), 0);
        cr_expect(rate > 0 && isfinite(rate), "rate %g", rate);
        double speed;
        cr_expect_eq(speed_class(rate, &speed), 0);
}

Test(speed_calibrate, parse) {
        bool is_auto = false;
        double speed = 0;

        cr_expect_eq(speed_parse("auto", &is_auto, &speed), 0);
        cr_expect(is_auto);
        cr_expect_eq(speed, 0);
        cr_expect_eq(speed_parse("1.5", &is_auto, &speed), 0);
        cr_expect(!is_auto);
        cr_expect_float_eq(speed, 1.5, 1e-12);
        cr_expect_eq(speed_parse("0.001", &is_auto, &speed), 0);
        cr_expect_eq(speed_parse("1000", &is_auto, &speed), 0);

        speed = 7;
        cr_expect_eq(speed_parse("0", &is_auto, &speed), -EINVAL);
        cr_expect_eq(speed_parse("1001", &is_auto, &speed), -EINVAL);
        cr_expect_eq(speed_parse("", &is_auto, &speed), -EINVAL);
        cr_expect_eq(speed_parse("1.5x", &is_auto, &speed), -EINVAL);
        cr_expect_eq(speed_parse("Auto", &is_auto, &speed), -EINVAL);
        cr_expect_eq(speed_parse("nan", &is_auto, &speed), -EINVAL);
        cr_expect_eq(speed, 7);
}
