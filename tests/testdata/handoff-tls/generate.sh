#!/usr/bin/env bash
# Regenerates the test-only handoff CA and certificates in this folder (see README.md). The tests
# never run this; the files are committed.
set -euo pipefail
cd "$(dirname "$0")"
days=36500
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)

ca() {  # name subject
  openssl req -x509 "${ec[@]}" -days "$days" -subj "$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
    -keyout "$1.key" -out "$1.crt" 2>/dev/null
}
issue() {  # ca name subject extendedKeyUsage [subjectAltName]
  local ext="basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=$4\n"
  if [ -n "${5:-}" ]; then ext+="subjectAltName=$5\n"; fi
  openssl req -new "${ec[@]}" -subj "$3" -keyout "$2.key" -out "$2.csr" 2>/dev/null
  openssl x509 -req -in "$2.csr" -CA "$1.crt" -CAkey "$1.key" -CAcreateserial -days "$days" \
    -extfile <(printf "$ext") -out "$2.crt" 2>/dev/null
  rm "$2.csr"
}

ca ca "/CN=handoff-test-ca"
ca other-ca "/CN=handoff-other-ca"
issue ca coordinator "/CN=handoff-coordinator" serverAuth "DNS:localhost,IP:127.0.0.1"
for node in cp-1 cp-2 cp-3 cp-4 cp-5; do
  issue ca "$node" "/O=handoff:agents/CN=$node" clientAuth
done
issue ca operator "/O=handoff:operators/CN=alice" clientAuth
issue other-ca rogue-cp-1 "/O=handoff:agents/CN=cp-1" clientAuth
issue other-ca rogue-operator "/O=handoff:operators/CN=mallory" clientAuth
rm -f ca.srl other-ca.srl other-ca.key
chmod 644 ./*.key
