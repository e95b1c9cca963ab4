# The Debian package: `cmake --build build --target package` writes
# build/handoff_<version>_amd64.deb (CPack's DEB generator), which
# `apt install ./handoff_<version>_amd64.deb` installs. What goes where, in Debian's layout:
#   /usr/bin                  handoff-agent, handoff-coordinator, handoffctl (what operators run)
#   /usr/lib/handoff          the sandbox's helpers: private executables only `handoffctl sandbox`
#                             starts (it looks there, ../lib/handoff from its own directory)
#   /lib/systemd/system       the units, installed but neither enabled nor started
#   /etc/handoff              the commented example configuration files, as conffiles
#   /usr/share/man/man{1,8}   a man page per program, from its --help (help2man)
#   /usr/share/doc/handoff    copyright, changelog
# The maintainer scripts (packaging/debian/) only reload systemd and stop the daemons on remove:
# no install, upgrade, remove or purge touches /etc/kubernetes, /var/lib/handoff or
# /var/lib/handoff-coordinator. tests/packaging checks all of this with lintian and dpkg.

set(handoff_debian_dir ${PROJECT_SOURCE_DIR}/packaging/debian)
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
                                                GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

# The package's version is the project's and its changelog's: they must agree, or the man pages
# and /usr/share/doc would speak of another release than the package's name.
find_program(HANDOFF_DPKG_PARSECHANGELOG dpkg-parsechangelog)
if(HANDOFF_DPKG_PARSECHANGELOG)
  execute_process(COMMAND ${HANDOFF_DPKG_PARSECHANGELOG} -l ${handoff_debian_dir}/changelog
                          -S Version
                  OUTPUT_VARIABLE handoff_changelog_version OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT handoff_changelog_version STREQUAL PROJECT_VERSION)
    message(FATAL_ERROR "packaging/debian/changelog's latest entry is ${handoff_changelog_version},"
                        " the project's version (CMakeLists.txt) ${PROJECT_VERSION}: add a "
                        "changelog entry for ${PROJECT_VERSION} (dch -v ${PROJECT_VERSION})")
  endif()
  # The man pages carry the release's date, not the build's, so that rebuilding gives the same
  # package (help2man reads SOURCE_DATE_EPOCH).
  execute_process(COMMAND ${HANDOFF_DPKG_PARSECHANGELOG} -l ${handoff_debian_dir}/changelog
                          -S Timestamp
                  OUTPUT_VARIABLE handoff_release_epoch OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${handoff_debian_dir}/changelog)

install(TARGETS handoff-agent handoff-coordinator handoffctl RUNTIME DESTINATION bin)
install(TARGETS handoff-standin handoff-sandbox-kubelet handoff-sandbox-node handoff-fake-apiserver
        RUNTIME DESTINATION lib/handoff)
# Debian 12 keeps packaged units in /lib/systemd/system (lintian: systemd-service-file-outside-lib).
file(GLOB handoff_units CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/systemd/*.service)
install(FILES ${handoff_units} DESTINATION /lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/examples/agent.yaml
              ${PROJECT_SOURCE_DIR}/packaging/examples/coordinator.yaml
        DESTINATION /etc/handoff)

# Man pages from each program's --help, with every subcommand's options (full-help.sh). The
# daemons are system administration commands (section 8), handoffctl a user command (section 1).
find_program(HANDOFF_HELP2MAN help2man)
set(handoff_man_pages)
function(handoff_man_page target section name)
  set(page ${CMAKE_BINARY_DIR}/packaging/man/${target}.${section})
  add_custom_command(
    OUTPUT ${page}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/packaging/man
    COMMAND sh -c "bash \"$0\" \"$1\" --exit-status > \"$2\"" ${handoff_debian_dir}/full-help.sh
            $<TARGET_FILE:${target}> ${page}.h2m
    COMMAND ${CMAKE_COMMAND} -E env SOURCE_DATE_EPOCH=${handoff_release_epoch}
            ${HANDOFF_HELP2MAN} --no-info --section=${section} --name=${name}
            "--version-string=${target} ${PROJECT_VERSION}" --include=${page}.h2m
            --output=${page} "bash ${handoff_debian_dir}/full-help.sh $<TARGET_FILE:${target}>"
    COMMAND gzip -9nf ${page}
    DEPENDS ${target} ${handoff_debian_dir}/full-help.sh
    COMMENT "Generating the man page ${target}(${section})"
    VERBATIM)
  install(FILES ${page}.gz DESTINATION share/man/man${section})
  set(handoff_man_pages ${handoff_man_pages} ${page}.gz PARENT_SCOPE)
endfunction()
if(HANDOFF_HELP2MAN)
  handoff_man_page(handoff-agent 8 "move a Kubernetes control-plane node between the in-tree \
AWS cloud provider and the AWS cloud-controller-manager")
  handoff_man_page(handoff-coordinator 8 "sequence the move of a control plane's nodes to the \
AWS cloud-controller-manager")
  handoff_man_page(handoffctl 1 "drive handoff's rollout, check the cluster side of the move, \
issue its certificates")
  add_custom_target(handoff_man_pages ALL DEPENDS ${handoff_man_pages})
else()
  # Building works without help2man; packaging does not, rather than ship without man pages.
  install(CODE "message(FATAL_ERROR \"help2man is missing: the man pages need it \
(apt-get install help2man)\")")
endif()

# Debian's documentation: the machine-readable copyright file and the changelog. handoff is its
# own upstream (a native package, version without a Debian revision), so the changelog is
# changelog.gz (lintian: wrong-name-for-changelog-of-native-package).
set(handoff_changelog ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
add_custom_command(
  OUTPUT ${handoff_changelog}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/packaging
  COMMAND sh -c "gzip -9n < \"$0\" > \"$1\"" ${handoff_debian_dir}/changelog ${handoff_changelog}
  DEPENDS ${handoff_debian_dir}/changelog
  VERBATIM)
add_custom_target(handoff_changelog ALL DEPENDS ${handoff_changelog})
install(FILES ${handoff_debian_dir}/copyright ${handoff_changelog} DESTINATION share/doc/handoff)
install(FILES ${handoff_debian_dir}/lintian-overrides DESTINATION share/lintian/overrides
        RENAME handoff)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME handoff)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "handoff maintainers <maintainers@users.noreply.a-seed-a1023864.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "move Kubernetes control planes to the AWS cloud-controller-manager")
# The extended description (the summary is the synopsis line before it).
set(CPACK_PACKAGE_DESCRIPTION
    "handoff moves a kubeadm control plane from the in-tree AWS cloud provider
(kube-controller-manager --cloud-provider=aws) to the out-of-tree AWS
cloud-controller-manager one control-plane node at a time, with Leader
Migration, so that no cloud controller ever runs in two managers at once; and
moves it back if asked.

handoff-agent runs on each control-plane node and carries out the moves of its
node; handoff-coordinator sequences the rollout over mutual TLS; handoffctl
drives it, checks the cluster side and issues the certificates, and rehearses
the whole migration on one machine (handoffctl sandbox).")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends from the shared libraries the binaries link (dpkg-shlibdeps): gRPC, Protobuf, SQLite,
# libcurl, OpenSSL, yaml-cpp, libsystemd, ... with the versions this build needs.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${handoff_debian_dir}/conffiles ${handoff_debian_dir}/postinst ${handoff_debian_dir}/prerm
    ${handoff_debian_dir}/postrm)
# Maintainer scripts 0755 and conffiles 0644 whatever the checkout's modes.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
