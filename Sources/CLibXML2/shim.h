#ifndef CCSD_CLIBXML2_SHIM_H
#define CCSD_CLIBXML2_SHIM_H
// libxml2 for the XMLStream module. Debian's libxml2 is built against the system ICU, whose
// UErrorCode clashes with Foundation's bundled ICU: turn the ICU part off before the other headers.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
#include <libxml/entities.h>
#include <libxml/xmlstring.h>

/// XML_SAX2_MAGIC as a value Swift can read.
static inline unsigned int ccsd_xml_sax2_magic(void) { return XML_SAX2_MAGIC; }

#endif
