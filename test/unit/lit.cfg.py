# -*- Python -*-
# Lit configuration for Loom's GoogleTest unit tests.

import os

import lit.formats

config.name = "LOOM-Unit"
config.suffixes = []
config.test_source_root = config.loom_unit_obj_root
config.test_exec_root = config.test_source_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
