# tb_warnings: the warning set every first-party target uses.
add_library(tb_warnings INTERFACE)
target_compile_options(tb_warnings INTERFACE -Wall -Wextra -Wno-unused-parameter
                                             -Wno-missing-field-initializers)
