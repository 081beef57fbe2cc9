#include "recovery/load_dir_listing.h"

#include <algorithm>
#include <utility>

namespace daruma {

std::optional<std::vector<DirEntry>> LoadDirListing::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  return listing_;
}

void LoadDirListing::Set(std::vector<DirEntry> listing) {
  std::lock_guard<std::mutex> lock(mu_);
  listing_ = std::move(listing);
}

void LoadDirListing::Forget() {
  std::lock_guard<std::mutex> lock(mu_);
  listing_.reset();
}

std::optional<bool> LoadDirListing::Has(const std::string& path) const {
  if (!InDir(path)) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  if (!listing_) return std::nullopt;
  return FindLocked(BaseName(path)) != listing_->end();
}

bool LoadDirListing::InDir(const std::string& path) const {
  return ParentDir(path) == dir_;
}

std::vector<DirEntry>::const_iterator LoadDirListing::FindLocked(const std::string& name) const {
  return std::find_if(listing_->begin(), listing_->end(),
                      [&](const DirEntry& e) { return e.name == name; });
}

void LoadDirListing::Created(const std::string& path, bool is_directory) {
  if (!InDir(path)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!listing_) return;
  // Opening an existing name with a creating mode changes no name.
  if (FindLocked(BaseName(path)) != listing_->end()) return;
  listing_->push_back({BaseName(path), is_directory, !is_directory});
}

void LoadDirListing::Removed(const std::string& path) {
  if (!InDir(path)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!listing_) return;
  auto it = FindLocked(BaseName(path));
  if (it != listing_->end()) listing_->erase(it);
}

void LoadDirListing::Renamed(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!listing_) return;
  DirEntry moved{BaseName(to), false, true};
  if (InDir(from)) {
    auto it = FindLocked(BaseName(from));
    if (it == listing_->end()) {
      listing_.reset();  // a name this listing missed: list again
      return;
    }
    moved.is_directory = it->is_directory;
    moved.is_regular = it->is_regular;
    listing_->erase(it);
  } else if (InDir(to)) {
    // A name comes in from elsewhere (the undo dir, say): what it is is not
    // known here.
    listing_.reset();
    return;
  }
  if (!InDir(to)) return;
  auto over = FindLocked(moved.name);
  if (over != listing_->end()) listing_->erase(over);
  listing_->push_back(std::move(moved));
}

}  // namespace daruma
