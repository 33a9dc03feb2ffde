// stb_image_write's code for the web build (the desktop links Debian's libstb, which has it
// compiled; the page compiles it from the same package's header).
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
