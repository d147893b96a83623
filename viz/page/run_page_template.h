// The run page's template (viz/page/run_page.{html,css,js}), compiled into the library by
// viz/page/embed.cmake so that writing a page needs no file at run time.
#pragma once

#include <string_view>

namespace gf::viz::page {

// The HTML holds four markers that run_page_html() replaces: @@TITLE@@, @@STYLE@@ (by
// kRunPageCss), @@RUN_DATA@@ (by the page's JSON) and @@SCRIPT@@ (by kRunPageJs).
extern const std::string_view kRunPageHtml;
extern const std::string_view kRunPageCss;
extern const std::string_view kRunPageJs;

}  // namespace gf::viz::page
