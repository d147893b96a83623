// The lesson texts cannot drift from the programs: every code excerpt in a lesson's README or
// in another .md of its folder (the parts of a long lesson), marked with <!-- snippet: NAME -->
// right before a ```cpp block, must equal the region of its main.cpp between
// "// [snippet: NAME]" and "// [/snippet]" (common indentation removed).
// An excerpt of a library file names it, relative to the top of the tree:
// <!-- snippet: trainer-step training/trainer.cpp --> quotes that file's region trainer-step.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream file(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  return lines;
}

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t");
  const auto end = s.find_last_not_of(" \t\r");
  return begin == std::string::npos ? "" : s.substr(begin, end - begin + 1);
}

// Removes the indentation that all non-blank lines share, and trailing blank lines.
std::string dedent(std::vector<std::string> lines) {
  size_t common = std::string::npos;
  for (const std::string& l : lines)
    if (!trim(l).empty()) common = std::min(common, l.find_first_not_of(' '));
  std::string out;
  for (const std::string& l : lines) out += (trim(l).empty() ? "" : l.substr(common)) + "\n";
  while (out.size() >= 2 && out[out.size() - 2] == '\n') out.pop_back();
  return out;
}

std::map<std::string, std::string> snippets_in_source(const fs::path& path) {
  std::map<std::string, std::string> snippets;
  const std::vector<std::string> lines = read_lines(path);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    if (t.rfind("// [snippet: ", 0) != 0) continue;
    const std::string name = t.substr(13, t.size() - 14);
    std::vector<std::string> body;
    size_t j = i + 1;
    while (j < lines.size() && trim(lines[j]) != "// [/snippet]") body.push_back(lines[j++]);
    INFO(path.string() << ": snippet " << name << " has no closing // [/snippet]");
    REQUIRE(j < lines.size());
    snippets[name] = dedent(body);
  }
  return snippets;
}

// One excerpt of a README: the region it quotes, the file it quotes it from ("" for the
// lesson's main.cpp), and its text.
struct Excerpt {
  std::string name, file, text;
};

std::vector<Excerpt> snippets_in_readme(const fs::path& path) {
  std::vector<Excerpt> snippets;
  const std::vector<std::string> lines = read_lines(path);
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    if (t.rfind("<!-- snippet: ", 0) != 0) continue;
    std::string name = t.substr(14, t.size() - 18), file;
    if (const auto space = name.find(' '); space != std::string::npos) {
      file = name.substr(space + 1);
      name.resize(space);
    }
    INFO(path.string() << ": snippet " << name << " must be followed by a ```cpp block");
    REQUIRE(trim(lines[i + 1]) == "```cpp");
    std::vector<std::string> body;
    size_t j = i + 2;
    while (j < lines.size() && trim(lines[j]) != "```") body.push_back(lines[j++]);
    snippets.push_back({name, file, dedent(body)});
  }
  return snippets;
}

}  // namespace

TEST_CASE("every lesson README excerpt matches the code it quotes", "[lessons][snippets]") {
  const fs::path root(GRADFORMER_SOURCE_DIR);
  int lessons = 0, excerpts = 0;
  for (const auto& entry : fs::directory_iterator(root / "lessons")) {
    if (!entry.is_directory()) continue;
    const fs::path readme = entry.path() / "README.md", source = entry.path() / "main.cpp";
    INFO("lesson " << entry.path().filename().string());
    REQUIRE(fs::exists(readme));
    REQUIRE(fs::exists(source));
    ++lessons;
    const auto in_main = snippets_in_source(source);
    // README.md and any other text of the folder (the parts of a lesson read in several sittings).
    for (const auto& text : fs::directory_iterator(entry.path())) {
      if (text.path().extension() != ".md") continue;
      for (const Excerpt& e : snippets_in_readme(text.path())) {
        INFO(text.path().filename().string()
             << ": snippet " << e.name << (e.file.empty() ? "" : " of " + e.file));
        if (!e.file.empty()) REQUIRE(fs::exists(root / e.file));
        const auto in_source = e.file.empty() ? in_main : snippets_in_source(root / e.file);
        REQUIRE(in_source.count(e.name) == 1);
        CHECK(e.text == in_source.at(e.name));
        ++excerpts;
      }
    }
  }
  CHECK(lessons >= 1);
  CHECK(excerpts >= lessons);  // every lesson shows at least one excerpt of its code
}

// CTest registers each TEST_CASE by name, and CMake's lists split on ';' except inside square
// brackets: a name with either would merge every later test into one entry. Guard it here.
TEST_CASE("no test name contains a semicolon or a square bracket", "[lessons][meta]") {
  int files = 0;
  for (const auto& entry :
       fs::recursive_directory_iterator(fs::path(GRADFORMER_SOURCE_DIR) / "tests")) {
    if (entry.path().extension() != ".cpp") continue;
    ++files;
    for (const std::string& line : read_lines(entry.path())) {
      const auto at = line.find("TEST_CASE(\"");
      if (at == std::string::npos) continue;
      const auto end = line.find('"', at + 11);
      INFO(entry.path().filename().string() << ": " << line);
      CHECK(line.substr(at + 11, end - at - 11).find_first_of(";[]") == std::string::npos);
    }
  }
  CHECK(files > 10);
}
