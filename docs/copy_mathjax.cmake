# Copies the part of MathJax 2 that the course's pages use from SOURCE (the
# Debian package libjs-mathjax, /usr/share/javascript/mathjax) to DESTINATION
# (<build>/docs/html/mathjax), so that the site carries its own MathJax.
#
#   cmake -DSOURCE=/usr/share/javascript/mathjax -DDESTINATION=build/ci/docs/html/mathjax -P docs/copy_mathjax.cmake
#
# What the pages use follows from docs/Doxyfile.in: MathJax 2, TeX input with
# the AMSmath and AMSsymbols extensions (tex2jax finds the formulas), HTML-CSS
# output. MathJax loads the rest on demand from paths relative to MathJax.js:
# the MathML element jax, the HTML-CSS output's autoloaded parts (tables,
# enclosures, ...), the data of the TeX font and its web fonts, the menu and
# zoom extensions. The whole extensions/ folder is copied (0.36 MB), so that a
# TeX macro that autoloads an extension (\color, \cancel, \boldsymbol, ...)
# still works. In all 1.5 MB in 201 files (libjs-mathjax 2.7.9 of Debian 12);
# of the package's 49 MB the rest is other output formats (SVG,
# CommonHTML, ...), other fonts (STIX, Latin Modern, ...), the combined config
# files, the unpacked sources and 47 other languages. Only the
# woff web fonts are copied: every browser since 2012 reads woff, and the otf
# and svg copies of the same fonts are for older ones.
if(NOT SOURCE OR NOT DESTINATION)
  message(FATAL_ERROR "usage: cmake -DSOURCE=<mathjax> -DDESTINATION=<html>/mathjax -P copy_mathjax.cmake")
endif()
if(NOT EXISTS ${SOURCE}/MathJax.js)
  message(FATAL_ERROR "no MathJax 2 in ${SOURCE} (Debian: apt-get install libjs-mathjax)")
endif()

set(_parts
    MathJax.js
    extensions
    jax/input/TeX
    jax/element/mml
    jax/output/HTML-CSS/config.js
    jax/output/HTML-CSS/jax.js
    jax/output/HTML-CSS/autoload
    jax/output/HTML-CSS/fonts/TeX
    fonts/HTML-CSS/TeX/woff
    localization/en)

file(REMOVE_RECURSE ${DESTINATION})
foreach(part ${_parts})
  if(NOT EXISTS ${SOURCE}/${part})
    message(FATAL_ERROR "MathJax in ${SOURCE} has no ${part}: not the MathJax 2 of libjs-mathjax?")
  endif()
  get_filename_component(_dir ${DESTINATION}/${part} DIRECTORY)
  file(COPY ${SOURCE}/${part} DESTINATION ${_dir})
endforeach()

# file(COPY) copies a symbolic link as a link; a packaging that links the fonts
# from another package would leave links that point nowhere in a copied site,
# so every link is replaced by the file it points to.
file(GLOB_RECURSE _links LIST_DIRECTORIES false ${DESTINATION}/*)
foreach(f ${_links})
  if(IS_SYMLINK ${f})
    file(REAL_PATH ${f} _target)
    file(REMOVE ${f})
    file(COPY_FILE ${_target} ${f})
  endif()
endforeach()
