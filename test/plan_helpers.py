"""Shared constants of the Hopper planner's host tests (test_plan_cpu.py, test_plan_widths_cpu.py,
test_plan_tokens_cpu.py): the TK_HOPPER_ODD_WIDTHS masks that select a rule set of plan_rules.h."""

# TK_HOPPER_ODD_WIDTHS masks (plan_rules.h): the default kOddWidths, the plans before 2026-12-03d, and
# bits 11 / 12 (kOddWidthsMidM, kOddWidthsRows64Unsplit224); the plans before 2026-12-03e, and bits 13 / 14
# (kOddWidthsMidM224, kOddWidths144Unaligned)
_ODD_ALL, _ODD_BEFORE_03D, _ODD_MID_M, _ODD_UNSPLIT224 = 262143, 2047, 2048, 4096
_ODD_BEFORE_03E, _ODD_MID_M224, _ODD_144_UNALIGNED = 8191, 8192, 16384
# the plans before 2026-12-04, and bits 15 / 16 (kOddWidthsSwappedMid224, kOddWidthsSwappedMid144); the
# plans before bit 17, and bit 17 (kOddWidthsMid192160)
_ODD_BEFORE_04, _ODD_SWAP_M224, _ODD_SWAP_M144 = 32767, 32768, 65536
_ODD_BEFORE_04B, _ODD_MID192 = 131071, 131072
