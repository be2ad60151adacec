# `cmake --install`: the agent in bin/, the Python package resume_run where the system
# Python imports it from; CPack: a .deb whose Depends come from the libraries it links.
# The wheel's build (scikit-build-core, pyproject.toml) installs only the agent, into the
# wheel's scripts (pip puts it in the environment's bin/); the wheel takes the package
# from python/resume_run itself.

if(SKBUILD)
  install(TARGETS resume-run RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR})
  return()
endif()

install(TARGETS resume-run RUNTIME DESTINATION bin)

# The systemd unit, its ExecStart naming the binary where this prefix puts it (/usr/bin for
# the .deb, /usr/local/bin for a plain `cmake --install`): made at install time, when the
# prefix is known, from scripts/deploy/systemd/resume-run@.service (the .deb's, /usr/bin).
# systemd reads units from <prefix>/lib/systemd/system for /usr and /usr/local alike.
install(CODE "
  file(READ \"${PROJECT_SOURCE_DIR}/scripts/deploy/systemd/resume-run@.service\" rr_unit)
  string(REPLACE \"ExecStart=/usr/bin/resume-run \" \"ExecStart=\${CMAKE_INSTALL_PREFIX}/bin/resume-run \" rr_unit \"\${rr_unit}\")
  if(NOT rr_unit MATCHES \"ExecStart=\${CMAKE_INSTALL_PREFIX}/bin/resume-run \")
    message(FATAL_ERROR \"resume-run@.service: no ExecStart=/usr/bin/resume-run line to point at the prefix\")
  endif()
  file(WRITE \"\${CMAKE_CURRENT_BINARY_DIR}/resume-run@.service\" \"\${rr_unit}\")
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/lib/systemd/system\" TYPE FILE
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
       FILES \"\${CMAKE_CURRENT_BINARY_DIR}/resume-run@.service\")
")
# Debian policy: the copyright file, and the changelog (gzip -9n), in /usr/share/doc/<package>.
install(FILES ${PROJECT_SOURCE_DIR}/cmake/deb/copyright DESTINATION share/doc/resume-run
  PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(CODE "
  execute_process(COMMAND gzip -9nc \"${PROJECT_SOURCE_DIR}/CHANGELOG.md\"
    OUTPUT_FILE \"\${CMAKE_CURRENT_BINARY_DIR}/changelog.gz\" RESULT_VARIABLE rr_gz)
  if(NOT rr_gz EQUAL 0)
    message(FATAL_ERROR \"gzip of CHANGELOG.md failed\")
  endif()
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/share/doc/resume-run\" TYPE FILE
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
       FILES \"\${CMAKE_CURRENT_BINARY_DIR}/changelog.gz\")
")

# Debian's Python searches <prefix>/lib/python3/dist-packages for /usr (packages) and
# /usr/local/lib/python3.X/dist-packages for /usr/local (local installs). The prefix is only
# known at install time (`cmake --install --prefix`, CPack's /usr), so the choice is made then.
# RR_PYTHON_INSTALL_DIR (relative to the prefix, or absolute) overrides it.
set(RR_PYTHON_INSTALL_DIR "" CACHE STRING
  "Where the resume_run package is installed (default: the Debian dist-packages dir of the prefix)")
set(rr_py_minor "")
if(EXISTS /usr/bin/python3)
  execute_process(COMMAND /usr/bin/python3 -c "import sys; print(sys.version_info[1])"
    OUTPUT_VARIABLE rr_py_minor OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
install(CODE "
  set(rr_py_dir \"${RR_PYTHON_INSTALL_DIR}\")
  if(NOT rr_py_dir)
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr/local\" AND NOT \"${rr_py_minor}\" STREQUAL \"\")
      set(rr_py_dir lib/python3.${rr_py_minor}/dist-packages)
    else()
      set(rr_py_dir lib/python3/dist-packages)
    endif()
  endif()
  if(NOT IS_ABSOLUTE \"\${rr_py_dir}\")
    set(rr_py_dir \"\${CMAKE_INSTALL_PREFIX}/\${rr_py_dir}\")
  endif()
  file(INSTALL DESTINATION \"\${rr_py_dir}\" TYPE DIRECTORY
       FILES \"${PROJECT_SOURCE_DIR}/python/resume_run\" FILES_MATCHING PATTERN \"*.py\" PATTERN \"__pycache__\" EXCLUDE)
")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME resume-run)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "resume-run maintainers <resume-run@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "run training on preemptible machines without losing work")
# The extended description (CPack puts the summary above it as the synopsis).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "resume-run wraps a training command: it watches for the
 cloud's preemption notice, asks the trainer for a checkpoint, compresses
 it and makes it durable in S3, GCS, Azure Blob or a directory; on a
 replacement machine it restores the newest complete checkpoint and
 starts training again. With its systemd unit and the resume_run module.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
# dpkg-shlibdeps turns the linked sonames into package names with minimum versions
# (libssl3, libzstd1, libcjson1, libxxhash0, libexpat1, libc6); the test in tests/deploy
# checks the result. libcurl is loaded with dlopen (storage/net/curl_api.c), which
# dpkg-shlibdeps cannot see: its package is the one that holds the libcurl.so.4 we built
# against (libcurl4; libcurl4t64 on Ubuntu 24.04), at least the version of its headers.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
get_filename_component(rr_curl_so "${CURL_LIBRARIES}" REALPATH)
execute_process(COMMAND dpkg-query -S "${rr_curl_so}" OUTPUT_VARIABLE rr_curl_pkg
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
string(REGEX REPLACE "[:,].*" "" rr_curl_pkg "${rr_curl_pkg}")
if(rr_curl_pkg MATCHES "^libcurl")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "${rr_curl_pkg} (>= ${CURL_VERSION_STRING})")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3")
# Stripped, as Debian ships binaries (debug info belongs in a -dbgsym package).
set(CPACK_STRIP_FILES ON)
include(CPack)
